// Layer tables of well-known models for profiled (emulated) training:
// parameters and forward FLOPs per sample of each layer, computed from the
// published architectures (no measured times). The emulation turns FLOP
// shares into sleeping time, so the exchange can be studied at a chosen
// compute/communication ratio without the model's real compute.
#pragma once

#include <string>
#include <vector>

namespace gradex {

struct LayerProfile {
  std::string name;
  double params = 0;         // elements
  double forward_flops = 0;  // per sample (image or sequence)
};

struct ModelProfile {
  std::string name;
  std::string input;  // what one sample is
  std::vector<LayerProfile> layers;  // in forward order
  double params() const;
  double forward_flops() const;
};

// resnet50 (224x224 ImageNet), vgg16 (224x224), bert_base (sequence 128),
// gpt2_small (sequence 1024), or a model file's path (train/model_file.h).
// Throws ConfigError on other names.
ModelProfile model_profile(const std::string& name);
std::vector<std::string> model_profile_names();

}  // namespace gradex
