#include "train/profiled_model.h"

#include <algorithm>
#include <cmath>

#include "common/errors.h"

namespace gradex {

ProfiledModel::ProfiledModel(ModelProfile profile, EmulationConfig config)
    : profile_(std::move(profile)), config_(config) {
  if (!(config_.param_scale > 0) || config_.forward_seconds < 0 || config_.backward_ratio < 0) {
    throw ConfigError("emulation", "scale must be positive and times non-negative");
  }
  const double flops = profile_.forward_flops();
  std::size_t offset = 0;
  for (const LayerProfile& l : profile_.layers) {
    const auto n = std::max<std::size_t>(
        1, static_cast<std::size_t>(std::llround(l.params * config_.param_scale)));
    params_.push_back({l.name, offset, n});
    offset += n;
    share_.push_back(flops > 0 ? l.forward_flops / flops : 1.0 / profile_.layers.size());
  }
}

void ProfiledModel::init(std::span<float> params, std::uint64_t) const {
  std::fill(params.begin(), params.end(), 0.0f);
}

double ProfiledModel::train_step(std::span<const float>, std::span<const std::size_t>,
                                 std::span<float> grads, float, const GradReady& ready,
                                 const std::function<void()>& backward_begins) {
  RankTime& time = pace_ != nullptr ? *pace_ : own_time_;
  if (pace_ == nullptr) own_time_.begin();
  // Forward: no gradients.
  time.pass_until(config_.forward_seconds);
  if (backward_begins) backward_begins();
  // Backward, last layer first, each layer ending at its own deadline.
  double at = config_.forward_seconds;
  for (std::size_t l = params_.size(); l-- > 0;) {
    at += share_[l] * config_.forward_seconds * config_.backward_ratio;
    time.pass_until(at);
    // A recognisable gradient (the layer index) so exchanges move real
    // data, unless the transport carries sizes only (grads left empty).
    const ParamSpan& p = params_[l];
    if (!grads.empty()) {
      std::fill_n(grads.begin() + static_cast<std::ptrdiff_t>(p.offset), p.count,
                  static_cast<float>(l));
    }
    if (ready) ready(l);
  }
  return 0.0;
}

}  // namespace gradex
