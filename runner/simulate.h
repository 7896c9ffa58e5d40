// One collective (an all-reduce unless asked) of a scheme on simulated ranks: the simulator's
// counterpart of runner/measure.h. Every endpoint starts at the same
// virtual instant; the time is the slowest worker's. Deterministic, so one
// iteration is the measurement.
#pragma once

#include <cstddef>
#include <vector>

#include "common/comm.h"
#include "common/scheme.h"
#include "common/topology.h"
#include "transport/sim/world.h"

namespace gradex::sim {

struct SimRequest {
  Collective collective = Collective::all_reduce;
  std::size_t count = 0;
  DType dtype = DType::f32;
  ReduceOp op = ReduceOp::sum;
  Topology topology;  // scheme.endpoints() endpoints
  // Phantom buffers (no memory, nothing checked) or real inputs whose
  // reduction is checked as runner/measure.h does.
  bool phantom = true;
  // The last worker enters this much later (virtual milliseconds).
  double straggler_ms = 0;
};

struct SimResult {
  double seconds = 0;           // virtual: slowest worker, start to finish
  std::size_t wrong = 0;        // real buffers only
  std::vector<Traffic> traffic; // per endpoint
  SimStats stats;
  double wall_seconds = 0;      // what the simulation itself took
};

SimResult simulate_allreduce(Scheme& scheme, const SimRequest& request);

}  // namespace gradex::sim
