// The tiny training run the training suites share: a 12-16-10-4 MLP on 240
// synthetic samples, 2 epochs of 4 steps, buckets small enough that there
// are several, no evaluation. Fast under the sanitizers. Also the emulated
// ResNet-50 that the virtual-clock tests train over shaped links.
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "schemes/registry.h"

#include "train/dataset.h"
#include "train/profiled_model.h"
#include "train/profiles.h"
#include "train/trainer.h"
#include "transport/options.h"

namespace gradex::testing {

inline TrainConfig tiny_config(const std::string& optimizer = "sgd") {
  TrainConfig c;
  c.layers = {12, 16, 10, 4};
  c.optimizer.kind = optimizer;
  c.optimizer.lr = optimizer == "adam" ? 0.01f : 0.1f;
  c.batch = 5;
  c.epochs = 2;
  c.max_steps = 4;
  c.bucket_bytes = 100;  // three buckets
  c.first_bucket_bytes = c.bucket_bytes;
  c.evaluate = false;
  return c;
}

inline const Dataset& tiny_data() {
  static const Dataset d = synthetic_dataset(240, 12, 4, 7);
  return d;
}

inline SchemeOptions workers(int n) {
  SchemeOptions o;
  o.workers = n;
  return o;
}

// The tiny run under `scheme` with `n` in-process workers.
inline TrainResult train(const std::string& scheme, int n, const TrainConfig& c) {
  return train_data_parallel(scheme, workers(n), c, tiny_data(), Dataset{});
}

// The largest element-wise difference of two parameter vectors.
inline double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, double{std::fabs(a[i] - b[i])});
  return m;
}

// The registered schemes that can shard (ZeRO, shards_training).
inline std::vector<std::string> sharding_schemes() {
  std::vector<std::string> names;
  for (const std::string& name : portable_scheme_names()) {
    if (shards_training(*make_scheme(name, workers(4)))) names.push_back(name);
  }
  return names;
}

// ResNet-50's layers with emulated compute, `samples` items to index.
inline ModelSource emulated_resnet50(const EmulationConfig& emu, std::size_t samples) {
  ModelSource source;
  const ModelProfile profile = model_profile("resnet50");
  source.make_model = [profile, emu] { return std::make_unique<ProfiledModel>(profile, emu); };
  source.samples = samples;
  return source;
}

// Every link of `n` workers (one per node, no servers) shaped to `link`.
inline TransportOptions shaped_links(int n, const LinkSpec& link) {
  TransportOptions network;
  network.shaping = Topology::grouped(n, 1, 0, link, link);
  return network;
}

}  // namespace gradex::testing
