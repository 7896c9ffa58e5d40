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

double ProfiledModel::train_step(LayerAccess& access, std::span<const std::size_t>, float,
                                 const GradReady& ready,
                                 const std::function<void()>& backward_begins) {
  RankTime& time = pace_ != nullptr ? *pace_ : own_time_;
  if (pace_ == nullptr) own_time_.begin();
  // Declared from its start: none of the host's time counts, not even
  // before the first layer (a ZeRO-3 gather posted there starts at once).
  time.pass_until(0);
  // Forward, first layer first, each layer ending at its own deadline.
  double at = 0;
  for (std::size_t l = 0; l < params_.size(); ++l) {
    access.params(l);
    // Never past the pass's end, which rounding of the shares could reach.
    at = std::min(at + share_[l] * config_.forward_seconds, config_.forward_seconds);
    time.pass_until(at);
    access.release_params(l);
  }
  time.pass_until(config_.forward_seconds);
  if (backward_begins) backward_begins();
  // Backward, last layer first.
  at = config_.forward_seconds;
  for (std::size_t l = params_.size(); l-- > 0;) {
    access.params(l);
    at += share_[l] * config_.forward_seconds * config_.backward_ratio;
    time.pass_until(at);
    // A recognisable gradient (the layer index) so exchanges move real
    // data, unless the transport carries sizes only (no buffers).
    if (float* g = access.grads(l); g != nullptr) {
      std::fill_n(g, params_[l].count, static_cast<float>(l));
    }
    if (ready) ready(l);
    access.release_params(l);
  }
  return 0.0;
}

}  // namespace gradex
