#include "runner/train_plan.h"

#include <numeric>

#include "runner/exit_codes.h"
#include "runner/machine.h"
#include "runner/train_output.h"
#include "common/errors.h"
#include "common/units.h"
#include "runner/group_run.h"
#include "schemes/registry.h"

namespace gradex {

namespace {

TrainOutputs outputs_of(const Scenario& sc, const TrainJob& job, const Trace& trace) {
  TrainOutputs w;
  w.config = job.config_json();
  w.config["workers"] = sc.workers;
  w.config["transport"] = sc.transport;
  w.scenario = &sc;
  w.folder = sc.output;
  // PS consistency training records no timeline.
  if (job.workload().consistency.empty()) w.trace = &trace;
  w.trace_path = job.workload().trace;
  return w;
}

// The (workers, consistency model) runs of PS training, in plan order.
struct ConsistencyRun {
  int workers = 0;
  Consistency consistency = Consistency::bsp;
  std::string label;
};

std::vector<ConsistencyRun> consistency_runs(const Scenario& sc, const TrainJob& job) {
  std::vector<ConsistencyRun> runs;
  for (int workers : sc.workers) {
    for (const std::string& name : job.workload().consistency) {
      const Consistency c = parse_consistency(name, "/workload/consistency");
      runs.push_back({workers, c, consistency_label(c, job.workload().staleness)});
    }
  }
  return runs;
}

void print_consistency_header(std::ostream& out, const Scenario& sc, const ConsistencyRun& run) {
  out << "#\n# parameter server, " << run.label << ", " << sc.ps_servers << " server(s), "
      << run.workers << " workers\n" << std::flush;
}

void record_consistency(const ConsistencyRun& run, const Scenario& sc, PsTrainResult r,
                        TrainOutcome& o) {
  o.staleness_table += staleness_row(run.label, sc.ps_servers, r);
  o.staleness.push_back(staleness_json(run.label, r));
  o.staleness.back()["workers"] = run.workers;
  o.runs.push_back({"ps_" + run.label, run.workers, std::move(r.train)});
}

// PS training through servers that run the optimizer, every rank a thread
// of this process over the scenario's transport.
void run_consistency(const Scenario& sc, const TrainJob& job, std::ostream& out, TrainOutcome& o) {
  for (const ConsistencyRun& run : consistency_runs(sc, job)) {
    print_consistency_header(out, sc, run);
    RankTransport transport{sc.transport, TransportOptions{sc.timeout, std::nullopt, sc.spin}};
    const int endpoints = run.workers + sc.ps_servers;
    if (sc.network.shaped) transport.options.shaping = scenario_topology(sc, run.workers, endpoints);
    PsTrainResult r = job.train_parameter_server(
        run.consistency, run.workers, sc.ps_servers, transport,
        [&](const EpochRecord& e) { print_epoch(out, run.label, e); });
    record_consistency(run, sc, std::move(r), o);
  }
}

// The same on a launched group: one process per endpoint.
void run_consistency_on_group(const Scenario& sc, const TrainJob& job, Comm& comm,
                              const std::function<void(const std::optional<Topology>&)>& reshape,
                              std::ostream& out, TrainOutcome& o) {
  const bool printing = comm.rank() == 0;
  const std::vector<ConsistencyRun> runs = consistency_runs(sc, job);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const ConsistencyRun& run = runs[i];
    const int endpoints = run.workers + sc.ps_servers;
    comm.barrier();
    reshape(group_shaping(sc, run.workers, endpoints, comm.size()));
    comm.barrier();
    if (comm.rank() >= endpoints) continue;  // idle in this run
    if (printing) print_consistency_header(out, sc, run);
    std::vector<int> members(static_cast<std::size_t>(endpoints));
    std::iota(members.begin(), members.end(), 0);
    SubComm group(comm, members, static_cast<std::uint32_t>(i % kSubCommSpaces));
    EpochCallback on_epoch;
    if (printing) on_epoch = [&](const EpochRecord& e) { print_epoch(out, run.label, e); };
    PsTrainResult r = ps_train_rank(group, job.ps_config(run.consistency, sc.ps_servers),
                                    job.config(), job.source(run.workers), run.workers, on_epoch);
    if (printing) record_consistency(run, sc, std::move(r), o);
  }
}

void print_train_run_header(std::ostream& out, const PlannedRun& run) {
  out << "#\n# " << run.scheme << ", " << run.workers << " workers, "
      << run.instance->endpoints() << " endpoints\n" << std::flush;
}

}  // namespace

void print_train_preamble(std::ostream& out, const Scenario& sc, const TrainJob& job) {
  out << "# gradex run: " << sc.name << "\n" << provenance_line() << "\n";
  if (!sc.description.empty()) out << "# " << sc.description << "\n";
  out << "# train workload: " << job.describe() << "\n";
  out << "# transport " << sc.transport << "; ";
  if (sc.network.shaped) {
    out << "network shaped: ranks per node " << sc.ranks_per_node << ", intra-node "
        << (sc.network.intra_node.unlimited() ? "unlimited"
                                              : format_rate(sc.network.intra_node.bytes_per_second))
        << ", inter-node "
        << (sc.network.inter_node.unlimited() ? "unlimited"
                                              : format_rate(sc.network.inter_node.bytes_per_second));
  } else {
    out << "network unshaped";
  }
  out << "; ps.servers: " << sc.ps_servers << "\n"
      << "# compute-share = compute / iteration (1: communication fully hidden); scaling = "
         "samples/s over N x one worker's (when the workers include 1)\n"
      << std::flush;
}

int run_train_plan(const RunPlan& plan, const TrainJob& job, std::ostream& out) {
  const Scenario& sc = plan.scenario;
  TrainOutcome o;
  Trace trace;
  if (!job.workload().consistency.empty()) {
    run_consistency(sc, job, out, o);
  }
  for (std::size_t i = 0; i < plan.runs.size(); ++i) {
    const PlannedRun& run = plan.runs[i];
    print_train_run_header(out, run);
    RankTransport transport{sc.transport, TransportOptions{sc.timeout, std::nullopt, sc.spin}};
    if (sc.network.shaped) {
      transport.options.shaping = scenario_topology(sc, run.workers, run.instance->endpoints());
    }
    // Only the first run is traced: one readable timeline.
    const bool traced = i == 0 && !job.workload().trace.empty();
    TrainResult r = run_training(run.scheme, scheme_options(sc, run.workers), job.config(),
                                 job.source(run.workers), transport, traced ? &trace : nullptr,
                                 [&](const EpochRecord& e) { print_epoch(out, run.scheme, e); });
    o.runs.push_back({run.scheme, run.workers, std::move(r)});
  }
  return finish_training(out, o, outputs_of(sc, job, trace));
}

int run_train_plan_on_group(const RunPlan& plan, const TrainJob& job, Comm& comm,
                            const std::function<void(const std::optional<Topology>&)>& reshape,
                            std::ostream& out) {
  const Scenario& sc = plan.scenario;
  GRADEX_ENFORCE_EQ(comm.size(), group_size(plan), "launched group size");
  const bool printing = comm.rank() == 0;
  TrainOutcome o;
  Trace trace;
  if (!job.workload().consistency.empty()) {
    run_consistency_on_group(sc, job, comm, reshape, out, o);
  }
  for (std::size_t i = 0; i < plan.runs.size(); ++i) {
    const PlannedRun& run = plan.runs[i];
    // Nobody sends under the new model before everybody installed it.
    comm.barrier();
    reshape(group_shaping(sc, run.workers, run.instance->endpoints(), comm.size()));
    comm.barrier();
    const int endpoints = run.instance->endpoints();
    if (comm.rank() >= endpoints) continue;  // idle in this run
    if (printing) print_train_run_header(out, run);
    std::vector<int> members(static_cast<std::size_t>(endpoints));
    std::iota(members.begin(), members.end(), 0);
    SubComm group(comm, members, static_cast<std::uint32_t>(i % kSubCommSpaces));
    // Each process builds its own scheme: the plan's instance is only read.
    SchemeExchange exchange(make_scheme(run.scheme, scheme_options(sc, run.workers)));
    const bool traced = i == 0 && !job.workload().trace.empty();
    EpochCallback on_epoch;
    if (printing) on_epoch = [&](const EpochRecord& e) { print_epoch(out, run.scheme, e); };
    TrainResult r = train_rank(group, exchange, job.config(), job.source(run.workers),
                               traced ? &trace : nullptr, on_epoch);
    if (traced) gather_trace(group, trace);
    if (printing) o.runs.push_back({run.scheme, run.workers, std::move(r)});
  }
  // Every rank finishes its share before rank 0 reports.
  comm.barrier();
  if (!printing) return kExitOk;
  return finish_training(out, o, outputs_of(sc, job, trace));
}

}  // namespace gradex
