// A Model whose compute is emulated: each layer's forward and backward take
// a share of a given total time proportional to its FLOPs (passing until
// a deadline, so errors do not accumulate: slept on a wall clock, charged
// exactly on a virtual one, train/rank_time.h), and backward reports each
// layer's gradient ready in reverse order, exactly as a real model would.
// Gradients keep their real sizes (optionally scaled down with the link
// rate, which keeps communication time and saves memory and copies).
#pragma once

#include "train/model.h"
#include "train/profiles.h"

namespace gradex {

struct EmulationConfig {
  double forward_seconds = 0.015;  // the whole forward pass of one micro-batch
  double backward_ratio = 2.0;     // backward takes this many times forward
  double param_scale = 1.0;        // gradient elements = params * scale (>= 1 each)
};

class ProfiledModel final : public Model {
 public:
  ProfiledModel(ModelProfile profile, EmulationConfig config);
  const std::vector<ParamSpan>& params() const override { return params_; }
  void init(std::span<float> params, std::uint64_t seed) const override;
  double train_step(LayerAccess& access, std::span<const std::size_t> samples, float scale,
                    const GradReady& ready, const std::function<void()>& backward_begins) override;
  using Model::train_step;
  bool emulated() const override { return true; }
  void pace_with(RankTime& time) override { pace_ = &time; }

 private:
  ModelProfile profile_;
  EmulationConfig config_;
  std::vector<ParamSpan> params_;
  std::vector<double> share_;  // per layer: fraction of the FLOPs
  // Where the compute passes: the loop's stretches, or without them a
  // stretch of this model's own on the wall clock, begun by train_step().
  RankTime* pace_ = nullptr;
  RankTime own_time_{wall_clock()};
};

}  // namespace gradex
