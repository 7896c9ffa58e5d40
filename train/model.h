// What the training loop needs from a model: its parameters as named spans
// of one flat float vector (so a whole gradient is one Tensor for the
// schemes and buckets are contiguous ranges of it), initialisation, and one
// forward + backward pass that reports each parameter's gradient as soon as
// it is final (the autograd hook DDP's reducer listens to).
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

// Called with a parameter index once that parameter's gradient is final for
// this pass; backward reports the parameters of the last layer first.
using GradReady = std::function<void(std::size_t param)>;

class Model {
 public:
  virtual ~Model() = default;
  virtual const std::vector<ParamSpan>& params() const = 0;
  std::size_t param_count() const;
  virtual void init(std::span<float> params, std::uint64_t seed) const = 0;
  // Forward and backward over `samples`: grads += scale * d(mean loss)/d(params).
  // Returns the mean loss over the samples. `backward_begins` (optional)
  // is called between the two passes, for the timeline.
  virtual double train_step(std::span<const float> params, std::span<const std::size_t> samples,
                            std::span<float> grads, float scale, const GradReady& ready,
                            const std::function<void()>& backward_begins) = 0;
  double train_step(std::span<const float> params, std::span<const std::size_t> samples,
                    std::span<float> grads, float scale, const GradReady& ready) {
    return train_step(params, samples, grads, scale, ready, {});
  }
  // True when compute is emulated (a profiled workload): there is nothing
  // to learn, so the loop skips the optimizer.
  virtual bool emulated() const { return false; }
  // The compute stretches train_step() runs in, begun just before each
  // call: an emulated model passes its time there (train/rank_time.h). A
  // model that computes for real takes the time it takes and ignores it.
  virtual void pace_with(RankTime& time) { (void)time; }
};

}  // namespace gradex
