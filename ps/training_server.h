// The server of parameter-server training: it holds one shard of the
// parameters, applies the gradients the workers push with an update rule
// it is given (the optimizer: ps-lite's server request handler), and
// answers each worker with the shard's current values when the consistency
// model lets that worker go on. Written against Comm alone, so it runs on
// every transport: in-process threads, tcp and zmq processes, and the
// simulator.
//
// One server endpoint serves every worker: it keeps a push receive posted
// for each and takes whichever arrives first (Comm::wait_any), as a ps-lite
// server handles requests in arrival order. A worker's messages, per step:
//   push  its gradient's slice of this shard   (worker -> server, push_tag)
//   pull  the shard's values to compute with   (server -> worker, pull_tag)
// The first pull is answered before any push, the last push gets no reply.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "common/comm.h"
#include "ps/consistency.h"

namespace gradex {

// Updates `params` (this shard) with `gradient`: under BSP the average of
// every worker's push of one step, otherwise one worker's push.
using ApplyGradient = std::function<void(std::span<float> params, std::span<const float> gradient)>;

struct TrainingServerPlan {
  int server = 0;     // this shard's index: its tags (ps/protocol.h)
  int workers = 1;    // endpoints 0 .. workers-1 of the Comm
  long steps = 0;     // pushes each worker makes
  Consistency consistency = Consistency::bsp;
  int staleness = 0;  // SSP's bound, in steps
};

// How stale the applied gradients were: for each push, the number of
// updates this shard applied between the pull whose values the worker
// computed it from and its arrival.
struct StalenessStats {
  static constexpr std::size_t kBins = 16;  // the last bin counts kBins-1 and more
  std::vector<long> histogram = std::vector<long>(kBins, 0);
  long sum = 0;
  long count = 0;
  long max = 0;

  void add(long staleness);
  StalenessStats& operator+=(const StalenessStats& o);
  double mean() const { return count ? static_cast<double>(sum) / static_cast<double>(count) : 0; }
};

// Serves `plan.workers` workers for plan.steps pushes each, starting from
// the values in `shard` and leaving the final ones there.
StalenessStats serve_training(Comm& comm, const TrainingServerPlan& plan, std::span<float> shard,
                              const ApplyGradient& apply);

}  // namespace gradex
