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
  // A symmetric subset: `topology` holds only some of the ranks and stands
  // for `represents` of them (a multiple), simulated rank r for every rank
  // congruent to r: each sends to and receives from the simulated rank
  // congruent to its peer. Exact when the scheme runs one schedule shifted
  // by rank (Scheme::symmetric) on a network that repeats itself with a
  // period dividing the subset, on blocks of equal size; the plan checks
  // all three (runner/plan.cpp). Phantom buffers only: one rank's values
  // cannot stand for another's. 0: every rank is simulated.
  int represents = 0;
  // The network the collective's protocol is chosen on (Scheme::run): the
  // whole one a subset stands for (required then), or `topology` itself as
  // the caller holds it, whose choice the caller's model column then
  // shares (Scheme::protocol_choice remembers it per network object).
  // nullptr without a subset: `topology`, as the simulator copies it.
  const Topology* whole = nullptr;
};

struct SimResult {
  double seconds = 0;           // virtual: slowest worker, start to finish
  std::size_t wrong = 0;        // real buffers only
  std::vector<Traffic> traffic; // per endpoint (of all that a subset stands for)
  SimStats stats;
  double wall_seconds = 0;      // what the simulation itself took
};

SimResult simulate_allreduce(Scheme& scheme, const SimRequest& request);

}  // namespace gradex::sim
