#include "schemes/registry.h"

#include "allreduce/ring.h"
#include "common/errors.h"

namespace gradex {

namespace {

template <typename T>
std::function<std::unique_ptr<Scheme>(const SchemeOptions&)> plain() {
  return [](const SchemeOptions& o) { return std::make_unique<T>(o); };
}

std::vector<SchemeEntry> build_registry() {
  std::vector<SchemeEntry> r;
  r.push_back({"ring", "ring all-reduce: reduce-scatter + all-gather, pipelined in segments",
               plain<RingScheme>()});
  return r;
}

}  // namespace

const std::vector<SchemeEntry>& scheme_registry() {
  static const std::vector<SchemeEntry> registry = build_registry();
  return registry;
}

const SchemeEntry& find_scheme(std::string_view name, const std::string& field) {
  std::string known;
  for (const SchemeEntry& e : scheme_registry()) {
    if (e.name == name) return e;
    known += (known.empty() ? "" : ", ") + e.name;
  }
  throw ConfigError(field, "unknown scheme '" + std::string(name) + "' (known: " + known + ")");
}

std::unique_ptr<Scheme> make_scheme(std::string_view name, const SchemeOptions& options) {
  return find_scheme(name).make(options);
}

}  // namespace gradex
