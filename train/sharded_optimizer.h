// The optimizer one worker runs over the parameters it steps: all of them
// when replicated (DDP), or under ZeRO-2 only its shard, the block of each
// bucket that its reduce-scatter leaves reduced. Each range gets an
// Optimizer whose state covers that range alone, so a sharded worker holds
// about 1/N of the replicated state. The optimizers are element-wise, so
// stepping the ranges one by one computes what one optimizer over the
// whole vector would.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "train/optimizer.h"
#include "train/reducer.h"

namespace gradex {

struct ParamRange {
  std::size_t offset = 0;
  std::size_t count = 0;
};

// Worker `rank`'s shard: block `rank` of BlockSplit{bucket.count, workers}
// within each bucket, in bucket order (empty blocks left out).
std::vector<ParamRange> zero_shard(const std::vector<Bucket>& buckets, int rank, int workers);

// Elements the ranges cover.
std::size_t range_elements(const std::vector<ParamRange>& ranges);

class ShardedOptimizer {
 public:
  ShardedOptimizer(const OptimizerConfig& config, std::vector<ParamRange> ranges);
  // Steps each range of `params` with the same range of `grads` (both the
  // full flat vectors); elements outside the ranges are left alone.
  void step(std::span<float> params, std::span<const float> grads);
  std::size_t state_bytes() const;

 private:
  std::vector<ParamRange> ranges_;
  std::vector<std::unique_ptr<Optimizer>> optimizers_;
};

}  // namespace gradex
