#include "train/sharded_params.h"

#include <algorithm>

#include "common/errors.h"
#include "common/scheme.h"

namespace gradex {

namespace {

constexpr std::size_t kFloatsPerLine = 64 / sizeof(float);

void raise_peak(std::atomic<std::size_t>& peak, std::size_t value) {
  std::size_t seen = peak.load();
  while (seen < value && !peak.compare_exchange_weak(seen, value)) {
  }
}

}  // namespace

std::vector<ParamUnit> wrap_units(const std::vector<ParamUnit>& units, std::size_t wrap_bytes) {
  std::vector<ParamUnit> groups;
  bool open = false;
  for (const ParamUnit& u : units) {
    if (!open) {
      groups.push_back(u);
    } else {
      ParamUnit& g = groups.back();
      GRADEX_ENFORCE_EQ(g.offset + g.count, u.offset, "units must be laid out contiguously");
      g.end_param = u.end_param;
      g.count += u.count;
    }
    open = groups.back().count * sizeof(float) < wrap_bytes;
  }
  return groups;
}

std::size_t zero3_group_at(std::size_t pos, std::size_t groups) {
  return pos < groups ? pos : 2 * groups - 1 - pos;
}

std::size_t zero3_posted_through(std::size_t pos, std::size_t groups) {
  return std::min(pos + 1, 2 * groups - 1);
}

std::vector<ExchangeCall> zero3_pass_exchanges(const std::vector<Bucket>& buckets, bool reduce,
                                               bool overlap, Compression compression) {
  const std::size_t groups = buckets.size();
  const auto count = [&](std::size_t g) { return buckets[groups - 1 - g].count; };
  std::vector<ExchangeCall> calls, at_end;
  std::size_t posted = 0;
  for (std::size_t pos = 0; pos < 2 * groups; ++pos) {
    while (posted <= zero3_posted_through(pos, groups)) {
      const std::size_t g = zero3_group_at(posted++, groups);
      calls.push_back({count(g), DType::f32, ReduceOp::sum, Collective::all_gather});
    }
    if (reduce && pos >= groups) {
      const std::size_t g = zero3_group_at(pos, groups);
      (overlap ? calls : at_end)
          .push_back(average_call(count(g), compression, Collective::reduce_scatter));
    }
  }
  calls.insert(calls.end(), at_end.begin(), at_end.end());
  return calls;
}

ShardedParams::ShardedParams(std::vector<ParamUnit> units, std::size_t wrap_bytes, int rank,
                             int workers, bool sizes_only)
    : units_(std::move(units)),
      groups_(wrap_units(units_, wrap_bytes)),
      rank_(rank),
      workers_(workers),
      sizes_only_(sizes_only),
      gathered_(2 * groups_.size()),
      tickets_(2 * groups_.size(), 0),
      held_at_(groups_.size(), 0),
      units_left_(groups_.size(), 0),
      grad_buffers_(groups_.size()) {
  GRADEX_ENFORCE(workers_ >= 1 && rank_ >= 0 && rank_ < workers_, "worker ", rank_, " of ", workers_);
  for (std::size_t g = 0, u = 0; g < groups_.size(); ++g) {
    while (u < units_.size() && units_[u].first_param < groups_[g].end_param) {
      group_of_.push_back(g);
      ++u;
    }
  }
  std::size_t total = 0;
  for (const ParamUnit& g : groups_) {
    shard_offset_.push_back(total);
    total += BlockSplit{g.count, static_cast<std::size_t>(workers_)}.size(
        static_cast<std::size_t>(rank_));
  }
  shard_elements_ = total;
  if (!sizes_only_) shard_params_.assign(total, 0.0f);
  // The gradients' shard is counted as held throughout: it is, in steps.
  live_params_ = peak_params_ = total * sizeof(float);
  live_grads_ = peak_grads_ = total * sizeof(float);
  peak_held_ = 2 * total * sizeof(float);
}

std::vector<Bucket> unit_buckets(const std::vector<ParamUnit>& units) {
  std::vector<Bucket> out;
  for (std::size_t u = units.size(); u-- > 0;) {
    Bucket b{units[u].offset, units[u].count, {}};
    for (std::size_t p = units[u].end_param; p-- > units[u].first_param;) b.params.push_back(p);
    out.push_back(std::move(b));
  }
  return out;
}

ReducerOptions ShardedParams::reducer_options(ReducerOptions options) {
  options.shard = true;
  overlap_ = options.overlap;
  options.bucket_grads = [this](std::size_t b) {
    const std::size_t g = group_of_bucket(b);
    return tensor(grad_buffers_[g], g);
  };
  // On the communication thread: keep this worker's averaged block, free
  // the rest. backward wrote the buffer before marking the bucket ready,
  // and touches it again only after finish() has waited for this.
  options.exchanged = [this](std::size_t b) {
    const std::size_t g = group_of_bucket(b);
    const BlockSplit split{groups_[g].count, static_cast<std::size_t>(workers_)};
    const std::size_t own = static_cast<std::size_t>(rank_);
    if (!sizes_only_) {
      std::copy_n(grad_buffers_[g].data + split.offset(own), split.size(own),
                  shard_grads_.data() + shard_offset_[g]);
    }
    free(grad_buffers_[g], g, live_grads_);
  };
  return options;
}

ShardedParams::UnitBuffer ShardedParams::allocate(std::size_t g, std::atomic<std::size_t>& live,
                                                  std::atomic<std::size_t>& peak, bool zeroed) {
  const ParamUnit& group = groups_[g];
  UnitBuffer b;
  b.held = true;
  if (!sizes_only_) {
    const std::size_t floats = group.count + kFloatsPerLine;
    b.storage = zeroed ? pool_.take(floats) : pool_.take_for_overwrite(floats);
    b.data = b.storage.data() + group.offset % kFloatsPerLine;
  }
  raise_peak(peak, live += group.count * sizeof(float));
  raise_peak(peak_held_, live_params_ + live_grads_);
  return b;
}

void ShardedParams::free(UnitBuffer& buffer, std::size_t g, std::atomic<std::size_t>& live) {
  if (!buffer.held) return;
  live -= groups_[g].count * sizeof(float);
  pool_.give_back(std::move(buffer.storage));
  buffer = UnitBuffer{};
}

Tensor ShardedParams::tensor(const UnitBuffer& buffer, std::size_t g) const {
  return Tensor{buffer.data, groups_[g].count, DType::f32};
}

float* ShardedParams::unit_in(const UnitBuffer& buffer, std::size_t unit) const {
  return buffer.data == nullptr ? nullptr : buffer.data + offset_in_group(unit);
}

ShardedParams::UnitBuffer ShardedParams::with_own_block(std::size_t g) {
  // Not zeroed: the all-gather writes every other worker's block (the
  // collective checks hold every scheme to it over markers).
  UnitBuffer b = allocate(g, live_params_, peak_params_, false);
  if (sizes_only_) return b;
  const BlockSplit split{groups_[g].count, static_cast<std::size_t>(workers_)};
  const std::size_t own = static_cast<std::size_t>(rank_);
  std::copy_n(shard_params_.data() + shard_offset_[g], split.size(own),
              b.data + split.offset(own));
  return b;
}

void ShardedParams::scatter_from_worker0(
    const std::function<void(std::size_t, std::span<float>)>& fill,
    const std::function<void(Tensor)>& broadcast) {
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    UnitBuffer b = allocate(g, live_params_, peak_params_);
    for (std::size_t u = 0; rank_ == 0 && !sizes_only_ && u < units_.size(); ++u) {
      if (group_of_[u] == g) fill(u, {unit_in(b, u), units_[u].count});
    }
    broadcast(tensor(b, g));
    const BlockSplit split{groups_[g].count, static_cast<std::size_t>(workers_)};
    const std::size_t own = static_cast<std::size_t>(rank_);
    if (!sizes_only_) {
      std::copy_n(b.data + split.offset(own), split.size(own),
                  shard_params_.data() + shard_offset_[g]);
    }
    free(b, g, live_params_);
  }
}

void ShardedParams::for_each_gathered(
    const std::function<void(std::size_t, std::span<const float>)>& visit) {
  GRADEX_ENFORCE(reducer_ != nullptr, "ZeRO-3 parameters gathered before attach()");
  GRADEX_ENFORCE(!sizes_only_, "a ZeRO-3 store of sizes only has no values to visit");
  // Between steps (scoring, the final hash): the storage kept for the
  // steps' buffers, and the shard's gradients (the optimizer has used
  // them; begin_step takes them afresh), would add to the evaluation's
  // activations.
  pool_.release_kept();
  ParamBuffer().swap(shard_grads_);
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    UnitBuffer b = with_own_block(g);
    reducer_->wait(reducer_->post_all_gather(tensor(b, g), g));
    visit(groups_[g].offset, {b.data, groups_[g].count});
    free(b, g, live_params_);
  }
}


void ShardedParams::post_gather(std::size_t pos) {
  const std::size_t g = group_at(pos);
  gathered_[pos] = with_own_block(g);
  tickets_[pos] = reducer_->post_all_gather(tensor(gathered_[pos], g), g);
}

void ShardedParams::begin_pass() {
  GRADEX_ENFORCE(next_acquire_ == 0 || next_acquire_ == gathered_.size(),
                 "a ZeRO-3 pass ended after ", next_acquire_, " of ", gathered_.size(), " groups");
  next_post_ = next_acquire_ = 0;
}

void ShardedParams::begin_step() {
  if (!sizes_only_) shard_grads_.assign(shard_elements_, 0.0f);
}

const float* ShardedParams::params(std::size_t unit) {
  GRADEX_ENFORCE(reducer_ != nullptr, "ZeRO-3 parameters gathered before attach()");
  const std::size_t g = group_of_.at(unit);
  if (units_left_[g] == 0) {
    // The group's first unit in this direction: its gather, and the next
    // group's behind it (the prefetch), whose buffer is taken as it is
    // posted. In a backward that reduce-scatters as it goes the prefetch is
    // posted once this gather has ended, so once the reduce-scatters
    // queued before it have freed their gradients: posted earlier, its
    // buffer was held beside every gradient still queued, four layers
    // whole when the link lags where two gathered and one gradient are
    // all a worker needs. The communication thread is not left idle: the
    // reduce-scatter posted after this gather is still ahead of the
    // prefetch. Elsewhere nothing is queued behind a gather, so the
    // prefetch goes first, lest the thread wait for this one to wake.
    const std::size_t pos = next_acquire_;
    GRADEX_ENFORCE(pos < gathered_.size() && group_at(pos) == g, "ZeRO-3 pass asked for unit ",
                   unit, " out of order (position ", pos, ")");
    const std::size_t through = zero3_posted_through(pos, groups_.size());
    const bool after_wait = overlap_ && pos >= groups_.size();
    while (next_post_ <= (after_wait ? pos : through)) post_gather(next_post_++);
    waited_ += reducer_->wait(tickets_[pos]);
    while (next_post_ <= through) post_gather(next_post_++);
    held_at_[g] = pos;
    units_left_[g] = static_cast<std::size_t>(std::count(group_of_.begin(), group_of_.end(), g));
    ++next_acquire_;
  }
  return unit_in(gathered_[held_at_[g]], unit);
}

void ShardedParams::release_params(std::size_t unit) {
  const std::size_t g = group_of_.at(unit);
  GRADEX_ENFORCE(units_left_[g] > 0, "unit ", unit, " released but not held");
  if (--units_left_[g] == 0) free(gathered_[held_at_[g]], g, live_params_);
}

float* ShardedParams::grads(std::size_t unit) {
  const std::size_t g = group_of_.at(unit);
  UnitBuffer& b = grad_buffers_[g];
  if (!b.held) b = allocate(g, live_grads_, peak_grads_);
  return unit_in(b, unit);
}

double ShardedParams::take_wait_seconds() {
  const double w = waited_;
  waited_ = 0;
  return w;
}

std::size_t ShardedParams::peak_param_bytes() const { return peak_params_.load(); }
std::size_t ShardedParams::peak_grad_bytes() const { return peak_grads_.load(); }

}  // namespace gradex
