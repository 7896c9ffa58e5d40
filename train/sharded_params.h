// ZeRO-3 (FSDP's full sharding) for one worker. The model's units (its
// layers) are wrapped into groups of consecutive units, each at least
// `wrap_bytes` (FSDP's size-based auto-wrap; 0: one group per layer). Of
// each group a worker keeps only block `rank` of BlockSplit{group.count,
// workers}, for the parameters, their reduced gradients and (through a
// ShardedOptimizer over the shard) the optimizer state. A pass gathers
// each group when its first unit is used and frees it after its last:
//
//   forward:  all-gather group 0, 1, ..., G-1 (each freed once used)
//   backward: all-gather group G-1, ..., 0; the group's gradient goes into
//             a buffer of its own, reduce-scattered as its bucket; block
//             `rank` of the result is kept and the buffer freed.
//
// While one group is used the next one's all-gather is already posted
// (FSDP's forward and backward prefetch), on the Reducer's communication
// thread, where the reduce-scatters also run: every worker posts the same
// exchanges in the same order. With a model that releases a unit before
// taking its gradients (the MLP), at most three groups are whole at any
// time when backward reduce-scatters as it goes: two gathered and one
// gradient in flight, or one and two. So a worker holds about 1/N of the
// replicated model plus a few groups.
//
// Sizes only (an emulated model on the simulator, whose values mean
// nothing), the store holds no values at all: the same gathers and
// reduce-scatters move phantom tensors, and the bytes it would hold are
// still counted.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "train/buffer_pool.h"
#include "train/model.h"
#include "train/param_buffer.h"
#include "train/rank_time.h"
#include "train/reducer.h"

namespace gradex {

// Consecutive units merged until each group holds at least `wrap_bytes`
// (the last may hold less); 0 leaves every unit alone.
std::vector<ParamUnit> wrap_units(const std::vector<ParamUnit>& units, std::size_t wrap_bytes);
// One bucket per unit (or group), last first (backward's order), each
// holding its parameters in readiness order.
std::vector<Bucket> unit_buckets(const std::vector<ParamUnit>& units);

// A pass gathers each of G groups twice, at 2G positions: forward groups
// 0, ..., G-1, then backward G-1, ..., 0. The group gathered at `pos`, and
// the last position whose gather is posted once `pos` is first used (the
// one after it: FSDP's prefetch).
std::size_t zero3_group_at(std::size_t pos, std::size_t groups);
std::size_t zero3_posted_through(std::size_t pos, std::size_t groups);

// The exchanges one ZeRO-3 pass over `buckets` (unit_buckets: one per
// group, the last group first) posts on the Reducer's thread, in the order
// it runs them, for a model that keeps LayerAccess's order (forward from
// the first unit, backward from the last, each unit's gradients ready
// before the next unit's values are asked for; whether a unit is released
// before or after its gradients are taken changes what is held, not what
// is posted):
//   forward:  gather 0 and 1, then each next one as a group is first used,
//             so gather G (the backward's first) follows G-1;
//   backward: as group g is first used, the gather behind it is posted;
//             g's reduce-scatter follows once its units are done (with
//             `overlap`; else every reduce-scatter at the pass's end, in
//             bucket order).
// `reduce` is false for a micro-batch before the last. A PS's dedicated
// servers replay this list (train/trainer.cpp), so it must be the order
// ShardedParams and the Reducer post in; a test records the workers'.
std::vector<ExchangeCall> zero3_pass_exchanges(const std::vector<Bucket>& buckets, bool reduce,
                                               bool overlap, Compression compression);

class ShardedParams final : public LayerAccess {
 public:
  ShardedParams(std::vector<ParamUnit> units, std::size_t wrap_bytes, int rank, int workers,
                bool sizes_only = false);

  // unit_buckets() of the groups: the buckets the Reducer reduce-scatters,
  // each from its group's gradient buffer.
  std::vector<Bucket> buckets() const { return unit_buckets(groups_); }
  // Joins `reducer` (made with buckets() and shard on): gathers are posted
  // on its thread, and its buckets come from and go to this store. The
  // time params() waits is left out of the compute (Reducer::wait).
  void attach(Reducer& reducer) { reducer_ = &reducer; }
  ReducerOptions reducer_options(ReducerOptions options);

  // Worker 0's initial parameters, group by group: worker 0 fills each of
  // the group's units (`fill(unit, values)`), `broadcast` sends the group
  // to every worker, each keeps its block.
  void scatter_from_worker0(const std::function<void(std::size_t, std::span<float>)>& fill,
                            const std::function<void(Tensor)>& broadcast);
  // Every group whole, in order, through all-gathers on the Reducer's
  // thread (every worker must call it), one group held at a time; `visit`
  // gets its offset in the flat vector and its values. Between steps only:
  // it releases the shard's gradients first.
  void for_each_gathered(const std::function<void(std::size_t, std::span<const float>)>& visit);

  // Before each step: the shard's gradients start from zero.
  void begin_step();
  // Before each pass (micro-batch): the gathers start over from unit 0's
  // forward.
  void begin_pass();
  const float* params(std::size_t unit) override;
  void release_params(std::size_t unit) override;
  float* grads(std::size_t unit) override;

  // Seconds params() spent waiting for gathers since the last call: the
  // communication a pass could not hide, which the loop counts as exposed
  // rather than as compute.
  double take_wait_seconds();
  std::size_t groups() const { return groups_.size(); }

  // Empty when sizes only (shard_grads: after for_each_gathered too, until
  // the next step).
  std::span<float> shard_params() { return {shard_params_.data(), shard_params_.size()}; }
  std::span<float> shard_grads() { return {shard_grads_.data(), shard_grads_.size()}; }
  // Elements of the shard (of parameters, and of gradients).
  std::size_t shard_elements() const { return shard_elements_; }
  // The most bytes held at once, shard included: of parameters (gathered
  // units too) and of gradients (unit buffers too).
  std::size_t peak_param_bytes() const;
  std::size_t peak_grad_bytes() const;
  // The most bytes of both held at once.
  std::size_t peak_held_bytes() const { return peak_held_.load(); }

 private:
  // A unit's values, placed so that element 0 has the 64-byte alignment
  // phase it has in the flat vector: Eigen then splits its loops where it
  // would there, and rounds as a replicated run does.
  struct UnitBuffer {
    ParamBuffer storage;
    float* data = nullptr;  // null when sizes only
    bool held = false;
  };
  // Buffers below are per group (g), not per unit.
  // `zeroed` false: the values are left as the storage held them.
  UnitBuffer allocate(std::size_t g, std::atomic<std::size_t>& live,
                      std::atomic<std::size_t>& peak, bool zeroed = true);
  void free(UnitBuffer& buffer, std::size_t g, std::atomic<std::size_t>& live);
  Tensor tensor(const UnitBuffer& buffer, std::size_t g) const;
  // Unit u's place in `buffer` (its group's); null when sizes only.
  float* unit_in(const UnitBuffer& buffer, std::size_t unit) const;
  std::size_t group_at(std::size_t pos) const { return zero3_group_at(pos, groups_.size()); }
  void post_gather(std::size_t pos);
  // Group g's buffer with this worker's block copied in.
  UnitBuffer with_own_block(std::size_t g);
  std::size_t group_of_bucket(std::size_t bucket) const { return groups_.size() - 1 - bucket; }
  // Where unit u starts in its group's buffer.
  std::size_t offset_in_group(std::size_t unit) const {
    return units_[unit].offset - groups_[group_of_[unit]].offset;
  }

  std::vector<ParamUnit> units_;   // the model's
  std::vector<ParamUnit> groups_;  // wrap_units(units_)
  std::vector<std::size_t> group_of_;  // per unit
  int rank_ = 0;
  int workers_ = 1;
  bool sizes_only_ = false;
  std::size_t shard_elements_ = 0;
  std::vector<std::size_t> shard_offset_;  // per group: its block's place in the shard
  ParamBuffer shard_params_, shard_grads_;
  Reducer* reducer_ = nullptr;
  bool overlap_ = false;  // the Reducer's: reduce-scatters as backward goes
  // Per position of the pass: the gathered buffer and its ticket.
  std::vector<UnitBuffer> gathered_;
  std::vector<std::size_t> tickets_;
  // Per group: the position it was gathered at, and how many of its units
  // are still to be used before it is freed (0: not held).
  std::vector<std::size_t> held_at_;
  std::vector<std::size_t> units_left_;
  std::size_t next_post_ = 0, next_acquire_ = 0;
  double waited_ = 0;
  std::vector<UnitBuffer> grad_buffers_;  // per group, during backward
  BufferPool pool_;  // every unit buffer's storage
  std::atomic<std::size_t> live_params_{0}, peak_params_{0}, live_grads_{0}, peak_grads_{0};
  std::atomic<std::size_t> peak_held_{0};
};

}  // namespace gradex
