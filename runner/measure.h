// Timing one scheme at one message size on in-process ranks: warm-up, timed
// iterations, a correctness check of every iteration, and the link traffic
// each endpoint really moved.
#pragma once

#include <chrono>
#include <cstddef>
#include <vector>

#include "common/comm.h"
#include "transport/inproc/world.h"
#include "common/scheme.h"

namespace gradex {

struct MeasureRequest {
  std::size_t count = 0;
  DType dtype = DType::f32;
  ReduceOp op = ReduceOp::sum;
  int warmup_iters = 1;
  int iters = 5;
  // Timeout, shaping and spin; a process transport run on threads
  // (measure_endpoint_threads) takes the same three.
  InprocOptions transport;
};

struct Measurement {
  // Per timed iteration: the slowest worker's time from the barrier to the
  // end of its all-reduce.
  std::vector<double> seconds;
  // Wrong elements summed over workers and timed iterations.
  std::size_t wrong = 0;
  // Link traffic of each endpoint in the last timed iteration.
  std::vector<Traffic> traffic;

  double median() const;
  double min() const;
  double max() const;
};

Measurement measure(Scheme& scheme, const MeasureRequest& request);

// One endpoint's part of a measurement, on any transport: warm-up and timed
// iterations between barriers, each checked, and the traffic of the last.
struct RankMeasurement {
  std::vector<double> seconds;  // per timed iteration (servers: not timed, 0)
  std::size_t wrong = 0;
  Traffic traffic;
};
RankMeasurement measure_rank(Comm& comm, Scheme& scheme, const MeasureRequest& request);

}  // namespace gradex
