// Optimizers over a flat span of parameters and the matching gradient span.
// Each owns its state (momentum, Adam's moments) for exactly the elements it
// was built for, so a sharded (ZeRO) worker builds one for its shard only.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace gradex {

struct OptimizerConfig {
  std::string kind = "sgd";  // "sgd" (with momentum) or "adam"
  float lr = 0.05f;
  float momentum = 0.9f;  // sgd
  float beta1 = 0.9f;     // adam
  float beta2 = 0.999f;
  float eps = 1e-8f;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual void step(std::span<float> params, std::span<const float> grads) = 0;
  // Bytes of optimizer state held (the memory ZeRO shards).
  virtual std::size_t state_bytes() const = 0;
};

// Throws ConfigError on an unknown kind or bad hyper-parameters.
std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config, std::size_t count);

}  // namespace gradex
