#include "train/model_file.h"

#include "common/errors.h"
#include "config/json_file.h"
#include "config/json_reader.h"

namespace gradex {

namespace {
// Far above any model's tensor count or size, and exact in a double.
constexpr long long kMaxLayers = 1'000'000;
constexpr long long kMaxParams = 1LL << 50;
constexpr double kMaxFlops = 1e21;

// "ddp_buckets" (optional): torch's own bucket assignment, for a reader to
// check gradex's against; each tensor in exactly one bucket.
void check_ddp_buckets(const nlohmann::json* buckets, std::size_t tensors) {
  if (buckets == nullptr) return;
  if (!buckets->is_array()) throw ConfigError("/ddp_buckets", "expected a list of buckets");
  std::vector<bool> seen(tensors, false);
  std::size_t placed = 0;
  for (std::size_t b = 0; b < buckets->size(); ++b) {
    const nlohmann::json& bucket = (*buckets)[b];
    const std::string at = "/ddp_buckets/" + std::to_string(b);
    if (!bucket.is_array() || bucket.empty()) throw ConfigError(at, "expected tensor indices");
    for (std::size_t k = 0; k < bucket.size(); ++k) {
      const nlohmann::json& i = bucket[k];
      if (!i.is_number_unsigned() || i.get<std::uint64_t>() >= tensors ||
          seen[i.get<std::size_t>()]) {
        throw ConfigError(at + "/" + std::to_string(k),
                          "expected a tensor index below " + std::to_string(tensors) +
                              " that no other bucket holds");
      }
      seen[i.get<std::size_t>()] = true;
      ++placed;
    }
  }
  if (placed != tensors) {
    throw ConfigError("/ddp_buckets", std::to_string(tensors - placed) + " tensors in no bucket");
  }
}
}  // namespace

bool is_model_file(const std::string& model) {
  return model.size() > 5 && model.compare(model.size() - 5, 5, ".json") == 0;
}

ModelProfile read_model_file(const std::string& path) {
  const nlohmann::json doc = read_json_file(path);
  const std::string where = path + "#";
  try {
    if (!doc.is_object()) throw ConfigError("", "expected a JSON object");
    JsonReader root(doc, "");
    ModelProfile m;
    m.name = root.string("name", "");
    if (m.name.empty()) throw ConfigError("/name", "expected the model's name");
    m.input = root.string("input", "one sample");
    root.string("source", "");  // where the file came from; for its reader
    const nlohmann::json* layers = root.find("layers");
    if (layers == nullptr || !layers->is_array() || layers->empty()) {
      throw ConfigError("/layers", "expected a non-empty list of parameter tensors");
    }
    if (static_cast<long long>(layers->size()) > kMaxLayers) {
      throw ConfigError("/layers", "more than " + std::to_string(kMaxLayers) + " tensors");
    }
    double flops = 0;
    for (std::size_t i = 0; i < layers->size(); ++i) {
      const std::string at = "/layers/" + std::to_string(i);
      if (!(*layers)[i].is_object()) throw ConfigError(at, "expected a tensor object");
      JsonReader layer((*layers)[i], at);
      LayerProfile l;
      l.name = layer.string("name", "");
      if (l.name.empty()) throw ConfigError(at + "/name", "expected the tensor's name");
      l.params = static_cast<double>(layer.integer("params", 0, 1, kMaxParams));
      if (!layer.has("params")) throw ConfigError(at + "/params", "expected the element count");
      l.forward_flops = layer.number("forward_flops", 0, 0, kMaxFlops);
      layer.reject_unknown();
      flops += l.forward_flops;
      m.layers.push_back(std::move(l));
    }
    if (!(flops > 0)) throw ConfigError("/layers", "no tensor has forward_flops: nothing to emulate");
    check_ddp_buckets(root.find("ddp_buckets"), m.layers.size());
    root.reject_unknown();
    return m;
  } catch (const ConfigError& e) {
    throw ConfigError(where + e.field(), e.reason());
  }
}

}  // namespace gradex
