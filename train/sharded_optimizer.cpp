#include "train/sharded_optimizer.h"

#include "common/errors.h"
#include "common/scheme.h"

namespace gradex {

std::vector<ParamRange> zero_shard(const std::vector<Bucket>& buckets, int rank, int workers) {
  std::vector<ParamRange> out;
  const auto mine = static_cast<std::size_t>(rank);
  for (const Bucket& b : buckets) {
    // The split the schemes' reduce-scatter uses (common/collective.h).
    const BlockSplit split{b.count, static_cast<std::size_t>(workers)};
    if (split.size(mine) > 0) out.push_back({b.offset + split.offset(mine), split.size(mine)});
  }
  return out;
}

std::size_t range_elements(const std::vector<ParamRange>& ranges) {
  std::size_t n = 0;
  for (const ParamRange& r : ranges) n += r.count;
  return n;
}

ShardedOptimizer::ShardedOptimizer(const OptimizerConfig& config, std::vector<ParamRange> ranges)
    : ranges_(std::move(ranges)) {
  // Built even when there is nothing to step: bad hyper-parameters fail alike.
  if (ranges_.empty()) make_optimizer(config, 0);
  for (const ParamRange& r : ranges_) optimizers_.push_back(make_optimizer(config, r.count));
}

void ShardedOptimizer::step(std::span<float> params, std::span<const float> grads) {
  GRADEX_ENFORCE_EQ(params.size(), grads.size());
  for (std::size_t i = 0; i < ranges_.size(); ++i) {
    const ParamRange& r = ranges_[i];
    GRADEX_ENFORCE(r.offset + r.count <= params.size(), "range beyond the parameters");
    optimizers_[i]->step(params.subspan(r.offset, r.count), grads.subspan(r.offset, r.count));
  }
}

std::size_t ShardedOptimizer::state_bytes() const {
  std::size_t bytes = 0;
  for (const auto& o : optimizers_) bytes += o->state_bytes();
  return bytes;
}

}  // namespace gradex
