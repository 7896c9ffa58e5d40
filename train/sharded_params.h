// ZeRO-3 (FSDP's full sharding) for one worker: of each unit (a layer) it
// keeps only block `rank` of BlockSplit{unit.count, workers}, for the
// parameters, their reduced gradients and (through a ShardedOptimizer over
// the shard) the optimizer state. A pass gathers each unit just before it
// is used and frees it after:
//
//   forward:  all-gather unit 0, 1, ..., U-1 (each freed once used)
//   backward: all-gather unit U-1, ..., 0; the unit's gradient goes into a
//             buffer of its own, reduce-scattered as its bucket; block
//             `rank` of the result is kept and the buffer freed.
//
// While one unit is used the next one's all-gather is already posted
// (FSDP's forward and backward prefetch), on the Reducer's communication
// thread, where the reduce-scatters also run: every worker posts the same
// exchanges in the same order. At most two gathered units and the
// gradients of the units in flight are whole at any time, so a worker
// holds about 1/N of the replicated model plus a few layers.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "train/model.h"
#include "train/param_buffer.h"
#include "train/reducer.h"

namespace gradex {

// One bucket per unit, last unit first (backward's order), each holding
// its unit's parameters in readiness order.
std::vector<Bucket> unit_buckets(const std::vector<ParamUnit>& units);

class ShardedParams final : public LayerAccess {
 public:
  ShardedParams(std::vector<ParamUnit> units, int rank, int workers);

  // unit_buckets(): the buckets the Reducer reduce-scatters, each from its
  // unit's gradient buffer.
  std::vector<Bucket> buckets() const { return unit_buckets(units_); }
  // Joins `reducer` (made with buckets() and shard on): gathers are posted
  // on its thread, and its buckets come from and go to this store.
  void attach(Reducer& reducer);
  ReducerOptions reducer_options(ReducerOptions options);

  // Worker 0's initial parameters, unit by unit: worker 0 fills each unit
  // (`fill`), `broadcast` sends it to every worker, each keeps its block.
  void scatter_from_worker0(const std::function<void(std::size_t, std::span<float>)>& fill,
                            const std::function<void(Tensor)>& broadcast);
  // Every unit whole, in order, through all-gathers on the Reducer's
  // thread (every worker must call it), one unit held at a time.
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

  std::span<float> shard_params() { return {shard_params_.data(), shard_params_.size()}; }
  std::span<float> shard_grads() { return {shard_grads_.data(), shard_grads_.size()}; }
  // Elements of the shard (of parameters, and of gradients).
  std::size_t shard_elements() const { return shard_params_.size(); }
  // The most bytes held at once, shard included: of parameters (gathered
  // units too) and of gradients (unit buffers too).
  std::size_t peak_param_bytes() const;
  std::size_t peak_grad_bytes() const;

 private:
  // A unit's values, placed so that element 0 has the 64-byte alignment
  // phase it has in the flat vector: Eigen then splits its loops where it
  // would there, and rounds as a replicated run does.
  struct UnitBuffer {
    ParamBuffer storage;
    float* data = nullptr;
  };
  UnitBuffer allocate(std::size_t unit, std::atomic<std::size_t>& live,
                      std::atomic<std::size_t>& peak);
  void free(UnitBuffer& buffer, std::size_t unit, std::atomic<std::size_t>& live);
  Tensor tensor(const UnitBuffer& buffer, std::size_t unit) const;
  // The unit gathered at position `pos` of a pass (forward then backward).
  std::size_t unit_at(std::size_t pos) const;
  void post_gather(std::size_t pos);
  // Unit u's buffer with this worker's block copied in.
  UnitBuffer with_own_block(std::size_t unit);
  std::size_t unit_of_bucket(std::size_t bucket) const { return units_.size() - 1 - bucket; }

  std::vector<ParamUnit> units_;
  int rank_ = 0;
  int workers_ = 1;
  std::vector<std::size_t> shard_offset_;  // per unit: its block's place in the shard
  ParamBuffer shard_params_, shard_grads_;
  Reducer* reducer_ = nullptr;
  // Per position of the pass: the gathered buffer and its ticket.
  std::vector<UnitBuffer> gathered_;
  std::vector<std::size_t> tickets_;
  std::vector<std::size_t> held_at_;  // per unit: the position it was acquired at
  std::size_t next_post_ = 0, next_acquire_ = 0;
  double waited_ = 0;
  std::vector<UnitBuffer> grad_buffers_;  // per unit, during backward
  std::atomic<std::size_t> live_params_{0}, peak_params_{0}, live_grads_{0}, peak_grads_{0};
};

}  // namespace gradex
