#include "config/workload.h"

#include <algorithm>
#include <limits>

#include "common/errors.h"

namespace gradex {

namespace {

std::vector<std::string> strings(JsonReader& r, const std::string& key) {
  const auto* v = r.find(key);
  if (v == nullptr) return {};
  if (!v->is_array() || v->empty()) {
    throw ConfigError(r.child(key), "expected a non-empty list of names, got " + json_kind(*v));
  }
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v->size(); ++i) {
    const auto& e = (*v)[i];
    if (!e.is_string()) {
      throw ConfigError(r.child(key) + "/" + std::to_string(i), "expected a name, got " + json_kind(e));
    }
    out.push_back(e.get<std::string>());
  }
  return out;
}

}  // namespace

std::optional<TrainWorkload> parse_workload(const nlohmann::json& value, const std::string& pointer) {
  JsonReader r(value, pointer);
  const std::string kind = r.string("kind", "");
  if (kind == "allreduce") {
    r.reject_unknown();
    return std::nullopt;
  }
  if (kind != "train") {
    throw ConfigError(r.child("kind"), kind.empty() ? "missing (\"allreduce\" or \"train\")"
                                                    : "unknown workload '" + kind +
                                                          "' (expected allreduce or train)");
  }
  constexpr long long kMaxInt = std::numeric_limits<int>::max();
  TrainWorkload w;
  w.model = r.string("model", w.model);
  w.layers = r.string("layers", w.layers);
  w.optimizer = r.string("optimizer", w.optimizer);
  w.lr = r.number("lr", w.lr, 0, 1e6, true);
  w.momentum = r.number("momentum", w.momentum, 0, 1);
  w.batch = static_cast<int>(r.integer("batch", w.batch, 1, 1 << 20));
  w.accumulate = static_cast<int>(r.integer("accumulate", w.accumulate, 1, 1 << 16));
  w.epochs = static_cast<int>(r.integer("epochs", w.epochs, 1, 1 << 16));
  w.max_steps = static_cast<long>(r.integer("max_steps", w.max_steps, 1, kMaxInt));
  w.seed = static_cast<std::uint64_t>(r.integer("seed", 1, 0, std::numeric_limits<long long>::max()));
  w.bucket_mb = r.number("bucket_mb", w.bucket_mb, 0, 1 << 20, true);
  w.first_bucket_mb = r.number("first_bucket_mb", w.first_bucket_mb, 0, 1 << 20, true);
  w.overlap = r.boolean("overlap", w.overlap);
  w.compression = r.string("compression", w.compression);
  w.data_dir = r.string("data_dir", w.data_dir);
  w.train_samples = static_cast<std::size_t>(
      r.integer("train_samples", 0, 0, std::numeric_limits<long long>::max()));
  w.trace = r.string("trace", w.trace);
  w.trace_steps = static_cast<int>(r.integer("trace_steps", w.trace_steps, 1, 1 << 20));
  w.fwd_ms = r.number("fwd_ms", w.fwd_ms, 0, 1e6);
  w.bwd_ratio = r.number("bwd_ratio", w.bwd_ratio, 0, 1e3);
  w.param_scale = r.number("param_scale", w.param_scale, 0, 1e3, true);
  w.consistency = strings(r, "consistency");
  w.staleness = static_cast<int>(r.integer("staleness", w.staleness, 0, 1 << 20));
  w.no_sync_baseline = r.boolean("no_sync_baseline", w.no_sync_baseline);
  w.zero = static_cast<int>(r.integer("zero", w.zero, 0, 3));
  w.unit_mb = r.number("unit_mb", w.unit_mb, 0, 1 << 20);
  if (r.has("unit_mb") && w.zero != 3) {
    throw ConfigError(r.child("unit_mb"), "applies under \"zero\": 3 only (ZeRO-3's units)");
  }
  if (r.has("staleness") &&
      std::find(w.consistency.begin(), w.consistency.end(), "ssp") == w.consistency.end()) {
    throw ConfigError(r.child("staleness"),
                      "applies to SSP only: give \"consistency\" with \"ssp\" too");
  }
  // PS consistency training pushes whole f32 gradients to servers that run
  // the optimizer: no buckets, hooks or timeline to set.
  for (const char* key : {"compression", "bucket_mb", "first_bucket_mb", "overlap", "trace", "zero"}) {
    if (!w.consistency.empty() && r.has(key)) {
      throw ConfigError(r.child(key), "does not apply to PS consistency training");
    }
  }
  // ZeRO-3 gathers and reduce-scatters one layer at a time: its buckets
  // are the layers.
  for (const char* key : {"bucket_mb", "first_bucket_mb"}) {
    if (w.zero == 3 && r.has(key)) {
      throw ConfigError(r.child(key), "does not apply under \"zero\": 3 (its units are its buckets: \"unit_mb\")");
    }
  }
  if (r.has("trace_steps") && w.trace.empty()) {
    throw ConfigError(r.child("trace_steps"), "applies with \"trace\" only");
  }
  // A profiled model emulates compute: it has no layers, data or optimizer
  // of its own; the MLP computes for real and has no emulated times.
  const bool mlp = w.model == "mlp";
  for (const char* key : {"layers", "optimizer", "lr", "momentum", "data_dir", "train_samples"}) {
    if (!mlp && r.has(key)) {
      throw ConfigError(r.child(key), "does not apply to the profiled model \"" + w.model + "\"");
    }
  }
  for (const char* key : {"fwd_ms", "bwd_ratio", "param_scale"}) {
    if (mlp && r.has(key)) {
      throw ConfigError(r.child(key), "applies to profiled models (\"model\": \"resnet50\", ...) only");
    }
  }
  r.reject_unknown();
  return w;
}

}  // namespace gradex
