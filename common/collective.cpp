#include "common/collective.h"

#include "common/errors.h"
#include "common/spelling.h"

namespace gradex {

std::string_view collective_name(Collective c) {
  switch (c) {
    case Collective::all_reduce: return "all_reduce";
    case Collective::reduce_scatter: return "reduce_scatter";
    case Collective::all_gather: return "all_gather";
    case Collective::broadcast: return "broadcast";
  }
  GRADEX_ENFORCE(false, "unknown collective ", static_cast<int>(c));
}

std::vector<std::string> collective_names() {
  std::vector<std::string> names;
  for (Collective c : kCollectives) names.emplace_back(collective_name(c));
  return names;
}

Collective parse_collective(std::string_view text, const std::string& field) {
  for (Collective c : kCollectives) {
    if (text == collective_name(c)) return c;
  }
  std::string known;
  for (const std::string& name : collective_names()) {
    if (!known.empty()) known += ", ";
    known += name;
  }
  throw ConfigError(field, "unknown collective '" + std::string(text) + "'" +
                               did_you_mean(text, collective_names()) + " (expected " + known +
                               ")");
}

double collective_bus_factor(Collective c, int n) {
  if (n <= 1) return 0;
  const double w = n;
  switch (c) {
    case Collective::all_reduce: return 2 * (w - 1) / w;
    case Collective::reduce_scatter:
    case Collective::all_gather: return (w - 1) / w;
    case Collective::broadcast: return 1;
  }
  GRADEX_ENFORCE(false, "unknown collective ", static_cast<int>(c));
}

bool collective_reduces(Collective c) {
  return c == Collective::all_reduce || c == Collective::reduce_scatter;
}

}  // namespace gradex
