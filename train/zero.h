// Sharded data parallelism (ZeRO stage 2): after backward, gradients are
// reduce-scattered around the ring so worker r holds the averaged block r
// only; it steps the parameters of that block with an optimizer whose state
// covers that block only (1/N of the replicated state); an all-gather then
// gives every worker the full updated parameters. The traffic equals one
// ring all-reduce, the optimizer memory drops by N.
#pragma once

#include "transport/inproc/world.h"
#include "train/dataset.h"
#include "train/trainer.h"

namespace gradex {

struct ZeroResult {
  TrainResult train;
  double sharded_state_bytes_max = 0;  // the largest shard's optimizer state
  double replicated_state_bytes = 0;   // what each DDP worker holds
};

ZeroResult train_zero(const TrainConfig& config, int workers, const Dataset& train,
                      const Dataset& test, const TransportOptions& transport = {},
                      const EpochCallback& on_epoch = {});

}  // namespace gradex
