#include "runner/execute.h"

#include "common/cancel.h"
#include "runner/measure.h"
#include "runner/measure_sim.h"

namespace gradex {

ResultRow result_row(const Scenario& sc, const PlannedRun& run, std::size_t count,
                     const Measurement& m, const Topology& topo) {
  const Scheme& scheme = *run.instance;
  const int endpoints = scheme.endpoints();
  ResultRow row;
  row.collective = sc.collective;
  row.scheme = run.scheme;
  row.workers = run.workers;
  row.endpoints = endpoints;
  row.count = count;
  row.bytes = count * dtype_size(sc.dtype);
  row.dtype = sc.dtype;
  row.op = sc.op;
  row.time = m.median();
  row.time_min = m.min();
  row.time_max = m.max();
  row.algbw = row.time > 0 ? static_cast<double>(row.bytes) / row.time : 0;
  row.busbw = row.algbw * scheme.bus_factor(sc.collective);
  row.wrong = m.wrong;
  row.checked = m.checked;
  row.source = m.simulated ? (m.subset > 0 ? "simulated-subset" : "simulated") : "measured";
  row.subset = m.subset;
  row.engine = m.engine;
  const ProtocolChoice choice = scheme.protocol_choice(sc.collective, row.bytes, topo);
  row.model_time = choice.seconds;
  if (sc.network.shaped && choice.protocol != nullptr) row.protocol = choice.protocol;
  row.chose = scheme.chosen_for(row.bytes);
  row.sweep = run.sweep;
  row.traffic = m.traffic;
  for (int e = 0; e < endpoints; ++e) {
    const Traffic want = scheme.collective_traffic(sc.collective, e, count, sc.dtype);
    row.link_bytes += m.traffic[static_cast<std::size_t>(e)].bytes_sent;
    row.expected_link_bytes += want.bytes_sent;
    if (!(m.traffic[static_cast<std::size_t>(e)] == want)) row.traffic_matches = false;
  }
  const double capacity = sc.network.shaped ? topo.egress_capacity() : 0;
  if (capacity > 0 && row.time > 0) {
    row.utilisation = static_cast<double>(row.link_bytes) / (capacity * row.time);
  }
  return row;
}

MeasureRequest measure_request(const Scenario& sc) {
  MeasureRequest req;
  req.collective = sc.collective;
  req.dtype = sc.dtype;
  req.op = sc.op;
  req.warmup_iters = sc.warmup_iters;
  req.iters = sc.iters;
  req.straggler_ms = sc.straggler_ms;
  req.transport = sc.transport;
  req.options.timeout = sc.timeout;
  req.options.spin = sc.spin;
  req.device_buffers = sc.device == "cuda";
  return req;
}

std::vector<ResultRow> execute_plan(
    const RunPlan& plan, const std::function<void(const PlannedRun&, const ResultRow&)>& on_row) {
  const Scenario& sc = plan.scenario;
  std::vector<ResultRow> rows;
  for (const PlannedRun& run : plan.runs) {
    Scheme& scheme = *run.instance;
    const int endpoints = scheme.endpoints();
    MeasureRequest req = measure_request(sc);
    Topology topo = scenario_topology(sc, scheme, run.workers);
    if (sc.network.shaped) req.options.shaping = topo;
    // A symmetric subset simulates its own ranks on the same network, cut
    // short (a symmetric scheme has no servers and no switch; the model
    // still prices every rank).
    const int subset = sc.symmetric_subset;
    const Topology simulated = subset > 0 ? scenario_topology(sc, subset, subset) : topo;
    // One world per run, its ranks made once for every size; the simulator
    // measures each size in one deterministic run of its own.
    const std::unique_ptr<World> world =
        sc.transport == "sim" ? nullptr : make_world(sc.transport, endpoints, req.options);
    for (std::size_t bytes : sc.sizes) {
      // The simulator runs a size in one go: it is cancelled between sizes.
      throw_if_cancelled();
      req.count = bytes / dtype_size(sc.dtype);
      const Measurement m = world ? measure(*world, scheme, req)
                                  : measure_simulated(scheme, req, simulated,
                                                      subset > 0 ? endpoints : 0, &topo);
      ResultRow row = result_row(sc, run, req.count, m, topo);
      on_row(run, row);
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

}  // namespace gradex
