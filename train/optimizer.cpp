#include "train/optimizer.h"

#include <Eigen/Core>

#include <cmath>

#include "common/errors.h"

namespace gradex {

namespace {

using Vec = Eigen::Map<Eigen::ArrayXf>;
using ConstVec = Eigen::Map<const Eigen::ArrayXf>;

// v = momentum v + g; p -= lr v  (PyTorch's SGD with momentum, no dampening).
class SgdMomentum final : public Optimizer {
 public:
  SgdMomentum(const OptimizerConfig& c, std::size_t count)
      : c_(c), velocity_(static_cast<Eigen::Index>(count)) {
    velocity_.setZero();
  }
  void step(std::span<float> params, std::span<const float> grads) override {
    GRADEX_ENFORCE_EQ(params.size(), static_cast<std::size_t>(velocity_.size()));
    GRADEX_ENFORCE_EQ(grads.size(), params.size());
    Vec p(params.data(), velocity_.size());
    ConstVec g(grads.data(), velocity_.size());
    velocity_ = c_.momentum * velocity_ + g;
    p -= c_.lr * velocity_;
  }
  std::size_t state_bytes() const override {
    return static_cast<std::size_t>(velocity_.size()) * sizeof(float);
  }

 private:
  OptimizerConfig c_;
  Eigen::ArrayXf velocity_;
};

// Adam (Kingma & Ba) with bias correction.
class Adam final : public Optimizer {
 public:
  Adam(const OptimizerConfig& c, std::size_t count)
      : c_(c), m_(static_cast<Eigen::Index>(count)), v_(static_cast<Eigen::Index>(count)) {
    m_.setZero();
    v_.setZero();
  }
  void step(std::span<float> params, std::span<const float> grads) override {
    GRADEX_ENFORCE_EQ(params.size(), static_cast<std::size_t>(m_.size()));
    GRADEX_ENFORCE_EQ(grads.size(), params.size());
    Vec p(params.data(), m_.size());
    ConstVec g(grads.data(), m_.size());
    ++t_;
    m_ = c_.beta1 * m_ + (1.0f - c_.beta1) * g;
    v_ = c_.beta2 * v_ + (1.0f - c_.beta2) * g.square();
    const float c1 = 1.0f - std::pow(c_.beta1, static_cast<float>(t_));
    const float c2 = 1.0f - std::pow(c_.beta2, static_cast<float>(t_));
    p -= c_.lr * (m_ / c1) / ((v_ / c2).sqrt() + c_.eps);
  }
  std::size_t state_bytes() const override {
    return static_cast<std::size_t>(m_.size() + v_.size()) * sizeof(float);
  }

 private:
  OptimizerConfig c_;
  Eigen::ArrayXf m_, v_;
  long t_ = 0;
};

}  // namespace

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& c, std::size_t count) {
  if (!(c.lr > 0)) throw ConfigError("optimizer.lr", "must be positive");
  if (c.kind == "sgd") {
    if (c.momentum < 0 || c.momentum >= 1) {
      throw ConfigError("optimizer.momentum", "must be in [0, 1)");
    }
    return std::make_unique<SgdMomentum>(c, count);
  }
  if (c.kind == "adam") return std::make_unique<Adam>(c, count);
  throw ConfigError("optimizer", "unknown optimizer '" + c.kind + "' (known: sgd, adam)");
}

}  // namespace gradex
