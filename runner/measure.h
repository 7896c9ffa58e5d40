// Timing one scheme at one message size on any transport: warm-up, timed
// iterations, a correctness check of every iteration, and the link traffic
// each endpoint really moved. One loop per rank (measure_rank) and one
// gather to rank 0 over the group itself (measure_group), whether the
// ranks are threads, threads holding sockets, or separate processes.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "common/comm.h"
#include "common/scheme.h"
#include "transport/options.h"
#include "transport/sim/stats.h"
#include "transport/world.h"

namespace gradex {

struct MeasureRequest {
  Collective collective = Collective::all_reduce;
  std::size_t count = 0;  // the whole buffer (nccl-tests' convention)
  DType dtype = DType::f32;
  ReduceOp op = ReduceOp::sum;
  int warmup_iters = 1;
  int iters = 5;
  // The last worker enters every iteration this much later (its time and
  // everybody's include the wait).
  double straggler_ms = 0;
  // Where the ranks run (a name of kTransportNames but "sim", whose
  // deterministic runs runner/measure_sim.h measures) and its settings.
  std::string transport = "inproc";
  TransportOptions options;
  // The workers' buffers in device memory (the scenario's "device":
  // "cuda"), filled and checked by kernels.
  bool device_buffers = false;
};

struct Measurement {
  // Per timed iteration: the slowest worker's time from the barrier to the
  // end of its collective.
  std::vector<double> seconds;
  // Wrong elements summed over workers and timed iterations.
  std::size_t wrong = 0;
  // False when the values were not checked (the simulator's phantom
  // buffers move sizes only): `wrong` then means nothing.
  bool checked = true;
  // Real transports measure; the simulator's time is virtual.
  bool simulated = false;
  // The endpoints the simulator ran when it ran a symmetric subset of them
  // (runner/simulate.h); 0: all of them.
  int subset = 0;
  // What the simulation cost its engine (simulated measurements only).
  std::optional<sim::SimStats> engine;
  // Link traffic of each endpoint in the last timed iteration.
  std::vector<Traffic> traffic;

  double median() const;
  double min() const;
  double max() const;
};

// On a world of request.transport made for the scheme's endpoints.
Measurement measure(Scheme& scheme, const MeasureRequest& request);
// On `world` (world.size() == scheme.endpoints()); rank 0's figures.
Measurement measure(World& world, Scheme& scheme, const MeasureRequest& request);

// One endpoint's part of a measurement, on any transport: warm-up and timed
// iterations between barriers, each checked, and the traffic of the last.
struct RankMeasurement {
  std::vector<double> seconds;  // per timed iteration (servers: not timed, 0)
  std::size_t wrong = 0;
  Traffic traffic;
};
RankMeasurement measure_rank(Comm& comm, Scheme& scheme, const MeasureRequest& request);

}  // namespace gradex
