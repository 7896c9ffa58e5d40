// Running a plan: every run at every size, measured and checked.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/comm.h"
#include "runner/plan.h"
#include "transport/sim/stats.h"

namespace gradex {

struct ResultRow {
  Collective collective = Collective::all_reduce;
  std::string scheme;
  int workers = 0;
  int endpoints = 0;
  std::size_t bytes = 0;
  std::size_t count = 0;
  DType dtype = DType::f32;
  ReduceOp op = ReduceOp::sum;
  double time = 0;  // median seconds over timed iterations
  double time_min = 0;
  double time_max = 0;
  double algbw = 0;  // bytes / time
  double busbw = 0;  // algbw * the collective's bus factor
  double model_time = 0;  // Scheme::model_time: the alpha-beta prediction, seconds
  std::size_t wrong = 0;
  bool checked = true;            // false: nothing was checked, `wrong` is empty
  // "measured", "simulated" (virtual time), or "simulated-subset": `subset`
  // ranks simulated, standing for all `endpoints` (runner/simulate.h).
  std::string source = "measured";
  int subset = 0;
  std::optional<sim::SimStats> engine;  // simulated rows: the engine's counts
  std::string chose;                // auto: the scheme it ran at this size
  std::string protocol;             // the protocol the collective took (LinkProtocol), if a choice
  std::string sweep;                // the sweep point ("ps.servers=2"), if any
  // Link bytes sent by all endpoints / (summed egress capacity x time);
  // negative when the network is unshaped (no capacity to compare with).
  double utilisation = -1;
  std::uint64_t link_bytes = 0;           // counted, all endpoints, one iteration
  std::uint64_t expected_link_bytes = 0;  // declared by the scheme
  std::vector<Traffic> traffic;           // counted, per endpoint
  bool traffic_matches = true;            // counted == declared, per endpoint
};

// One table row from a measurement of `run` at `count` elements (shared by
// the in-process runner and the launched multi-process run).
struct Measurement;
struct MeasureRequest;

// What the scenario asks each measurement for (dtype, op, iterations, the
// straggler, the transport and its settings); the count is the caller's.
MeasureRequest measure_request(const Scenario& scenario);
ResultRow result_row(const Scenario& scenario, const PlannedRun& run, std::size_t count,
                     const Measurement& m, const Topology& topology);

// Calls `on_row` as each row completes (for live tables) and returns all.
std::vector<ResultRow> execute_plan(const RunPlan& plan,
                                    const std::function<void(const PlannedRun&, const ResultRow&)>& on_row);

}  // namespace gradex
