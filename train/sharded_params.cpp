#include "train/sharded_params.h"

#include <algorithm>
#include <chrono>

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

ShardedParams::ShardedParams(std::vector<ParamUnit> units, int rank, int workers)
    : units_(std::move(units)),
      rank_(rank),
      workers_(workers),
      gathered_(2 * units_.size()),
      tickets_(2 * units_.size(), 0),
      held_at_(units_.size(), 0),
      grad_buffers_(units_.size()) {
  GRADEX_ENFORCE(workers_ >= 1 && rank_ >= 0 && rank_ < workers_, "worker ", rank_, " of ", workers_);
  std::size_t total = 0;
  for (const ParamUnit& u : units_) {
    shard_offset_.push_back(total);
    total += BlockSplit{u.count, static_cast<std::size_t>(workers_)}.size(
        static_cast<std::size_t>(rank_));
  }
  shard_params_.assign(total, 0.0f);
  shard_grads_.assign(total, 0.0f);
  live_params_ = peak_params_ = total * sizeof(float);
  live_grads_ = peak_grads_ = total * sizeof(float);
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
  options.bucket_grads = [this](std::size_t b) {
    const std::size_t u = unit_of_bucket(b);
    return tensor(grad_buffers_[u], u);
  };
  // On the communication thread: keep this worker's averaged block, free
  // the rest. backward wrote the buffer before marking the bucket ready,
  // and touches it again only after finish() has waited for this.
  options.exchanged = [this](std::size_t b) {
    const std::size_t u = unit_of_bucket(b);
    const BlockSplit split{units_[u].count, static_cast<std::size_t>(workers_)};
    const std::size_t own = static_cast<std::size_t>(rank_);
    std::copy_n(grad_buffers_[u].data + split.offset(own), split.size(own),
                shard_grads_.data() + shard_offset_[u]);
    free(grad_buffers_[u], u, live_grads_);
  };
  return options;
}

void ShardedParams::attach(Reducer& reducer) { reducer_ = &reducer; }

ShardedParams::UnitBuffer ShardedParams::allocate(std::size_t unit,
                                                  std::atomic<std::size_t>& live,
                                                  std::atomic<std::size_t>& peak) {
  const ParamUnit& u = units_[unit];
  UnitBuffer b;
  b.storage.assign(u.count + kFloatsPerLine, 0.0f);
  b.data = b.storage.data() + u.offset % kFloatsPerLine;
  raise_peak(peak, live += u.count * sizeof(float));
  return b;
}

void ShardedParams::free(UnitBuffer& buffer, std::size_t unit, std::atomic<std::size_t>& live) {
  if (buffer.data == nullptr) return;
  live -= units_[unit].count * sizeof(float);
  buffer = UnitBuffer{};  // gives the memory back, not just the size
}

Tensor ShardedParams::tensor(const UnitBuffer& buffer, std::size_t unit) const {
  return Tensor{buffer.data, units_[unit].count, DType::f32};
}

ShardedParams::UnitBuffer ShardedParams::with_own_block(std::size_t unit) {
  UnitBuffer b = allocate(unit, live_params_, peak_params_);
  const BlockSplit split{units_[unit].count, static_cast<std::size_t>(workers_)};
  const std::size_t own = static_cast<std::size_t>(rank_);
  std::copy_n(shard_params_.data() + shard_offset_[unit], split.size(own),
              b.data + split.offset(own));
  return b;
}

void ShardedParams::scatter_from_worker0(
    const std::function<void(std::size_t, std::span<float>)>& fill,
    const std::function<void(Tensor)>& broadcast) {
  for (std::size_t u = 0; u < units_.size(); ++u) {
    UnitBuffer b = allocate(u, live_params_, peak_params_);
    if (rank_ == 0) fill(u, {b.data, units_[u].count});
    broadcast(tensor(b, u));
    const BlockSplit split{units_[u].count, static_cast<std::size_t>(workers_)};
    const std::size_t own = static_cast<std::size_t>(rank_);
    std::copy_n(b.data + split.offset(own), split.size(own),
                shard_params_.data() + shard_offset_[u]);
    free(b, u, live_params_);
  }
}

void ShardedParams::for_each_gathered(
    const std::function<void(std::size_t, std::span<const float>)>& visit) {
  GRADEX_ENFORCE(reducer_ != nullptr, "ZeRO-3 parameters gathered before attach()");
  for (std::size_t u = 0; u < units_.size(); ++u) {
    UnitBuffer b = with_own_block(u);
    reducer_->wait(reducer_->post_all_gather(tensor(b, u), u));
    visit(u, {b.data, units_[u].count});
    free(b, u, live_params_);
  }
}

std::size_t ShardedParams::unit_at(std::size_t pos) const {
  const std::size_t n = units_.size();
  return pos < n ? pos : 2 * n - 1 - pos;
}

void ShardedParams::post_gather(std::size_t pos) {
  const std::size_t u = unit_at(pos);
  gathered_[pos] = with_own_block(u);
  tickets_[pos] = reducer_->post_all_gather(tensor(gathered_[pos], u), u);
}

void ShardedParams::begin_pass() {
  GRADEX_ENFORCE(next_acquire_ == 0 || next_acquire_ == gathered_.size(),
                 "a ZeRO-3 pass ended after ", next_acquire_, " of ", gathered_.size(), " units");
  next_post_ = next_acquire_ = 0;
}

void ShardedParams::begin_step() { std::fill(shard_grads_.begin(), shard_grads_.end(), 0.0f); }

const float* ShardedParams::params(std::size_t unit) {
  GRADEX_ENFORCE(reducer_ != nullptr, "ZeRO-3 parameters gathered before attach()");
  const std::size_t pos = next_acquire_;
  GRADEX_ENFORCE(pos < gathered_.size() && unit_at(pos) == unit, "ZeRO-3 pass asked for unit ",
                 unit, " out of order (position ", pos, ")");
  // This unit's gather, and the next one's behind it (the prefetch).
  while (next_post_ <= std::min(pos + 1, gathered_.size() - 1)) post_gather(next_post_++);
  const auto t0 = std::chrono::steady_clock::now();
  reducer_->wait(tickets_[pos]);
  waited_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  held_at_[unit] = pos;
  ++next_acquire_;
  return gathered_[pos].data;
}

void ShardedParams::release_params(std::size_t unit) {
  free(gathered_[held_at_.at(unit)], unit, live_params_);
}

float* ShardedParams::grads(std::size_t unit) {
  UnitBuffer& b = grad_buffers_.at(unit);
  if (b.data == nullptr) b = allocate(unit, live_grads_, peak_grads_);
  return b.data;
}

double ShardedParams::take_wait_seconds() {
  const double w = waited_;
  waited_ = 0;
  return w;
}

std::size_t ShardedParams::peak_param_bytes() const { return peak_params_.load(); }
std::size_t ShardedParams::peak_grad_bytes() const { return peak_grads_.load(); }

}  // namespace gradex
