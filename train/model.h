// What the training loop needs from a model: its parameters as named spans
// of one flat float vector (so a whole gradient is one Tensor for the
// schemes and buckets are contiguous ranges of it), initialisation, and one
// forward + backward pass that reports each parameter's gradient as soon as
// it is final (the autograd hook DDP's reducer listens to). The pass reads
// parameters and writes gradients through a LayerAccess, unit by unit, so
// that ZeRO-3 can hold only one worker's shard and gather each unit (one
// layer, FSDP's wrapping) just before it is used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "train/rank_time.h"

namespace gradex {

struct Evaluation {
  double loss = 0;
  double accuracy = 0;
};

struct ParamSpan {
  std::string name;
  std::size_t offset = 0;  // into the flat parameter / gradient vector
  std::size_t count = 0;
};

// A run of consecutive parameters that is gathered and used together (an
// FSDP unit: one layer's weight and bias).
struct ParamUnit {
  std::size_t first_param = 0;  // parameters [first_param, end_param)
  std::size_t end_param = 0;
  std::size_t offset = 0;  // into the flat vector: the first parameter's
  std::size_t count = 0;
};

// Where a pass reads each unit's parameters and adds its gradients.
// Replicated training hands out ranges of the flat vectors (FlatAccess);
// ZeRO-3 gathers a unit on params() and frees it on release_params().
// Pointers are to the unit's first element; a pass uses units in the order
// forward (first to last) then backward (last to first), each once.
class LayerAccess {
 public:
  virtual ~LayerAccess() = default;
  // Unit u's parameters, valid until release_params(u).
  virtual const float* params(std::size_t unit) = 0;
  virtual void release_params(std::size_t unit) { (void)unit; }
  // Where backward adds unit u's gradient (already holding what earlier
  // micro-batches added); null when the buffers carry sizes only.
  virtual float* grads(std::size_t unit) = 0;
};

// One pass over a model's values, first to last, as consecutive ranges of
// the flat vector that each hold whole units: visit(offset, values) per
// range, values valid during the call. Replicated training passes the
// whole vector as one range (whole_vector_pass); ZeRO-3 one gathered group
// at a time, so that scoring never holds the whole model.
using ParamRangeVisitor = std::function<void(std::size_t offset, std::span<const float> values)>;
using ParamPass = std::function<void(const ParamRangeVisitor&)>;
ParamPass whole_vector_pass(std::span<const float> params);

// Called with a parameter index once that parameter's gradient is final for
// this pass; backward reports the parameters of the last layer first.
using GradReady = std::function<void(std::size_t param)>;

class Model {
 public:
  virtual ~Model() = default;
  virtual const std::vector<ParamSpan>& params() const = 0;
  std::size_t param_count() const;
  // The units a pass uses, in forward order; by default one per parameter.
  virtual std::vector<ParamUnit> units() const;
  virtual void init(std::span<float> params, std::uint64_t seed) const = 0;
  // Unit u's part of init(params, seed) into `out` (u's count), without the
  // whole vector (ZeRO-3 never holds it). By default through a whole copy.
  virtual void init_unit(std::size_t unit, std::span<float> out, std::uint64_t seed) const;
  // Forward and backward over `samples`: grads += scale * d(mean loss)/d(params).
  // Returns the mean loss over the samples. `backward_begins` (optional)
  // is called between the two passes, for the timeline.
  virtual double train_step(LayerAccess& access, std::span<const std::size_t> samples,
                            float scale, const GradReady& ready,
                            const std::function<void()>& backward_begins) = 0;
  // Over whole flat vectors (`grads` empty when they carry sizes only).
  double train_step(std::span<const float> params, std::span<const std::size_t> samples,
                    std::span<float> grads, float scale, const GradReady& ready,
                    const std::function<void()>& backward_begins = {});
  // True when compute is emulated (a profiled workload): there is nothing
  // to learn, so the loop skips the optimizer.
  virtual bool emulated() const { return false; }
  // The compute stretches train_step() runs in, begun just before each
  // call: an emulated model passes its time there (train/rank_time.h). A
  // model that computes for real takes the time it takes and ignores it.
  virtual void pace_with(RankTime& time) { (void)time; }
};

// LayerAccess over whole flat vectors (either may be empty: sizes only).
class FlatAccess final : public LayerAccess {
 public:
  FlatAccess(std::span<const float> params, std::span<float> grads, std::vector<ParamUnit> units)
      : params_(params), grads_(grads), units_(std::move(units)) {}
  const float* params(std::size_t unit) override {
    return params_.empty() ? nullptr : params_.data() + units_.at(unit).offset;
  }
  float* grads(std::size_t unit) override {
    return grads_.empty() ? nullptr : grads_.data() + units_.at(unit).offset;
  }

 private:
  std::span<const float> params_;
  std::span<float> grads_;
  std::vector<ParamUnit> units_;
};

}  // namespace gradex
