#include "config/sweeps.h"

#include "common/errors.h"
#include "config/repeats.h"

namespace gradex {

const std::vector<std::string>& sweepable_fields() {
  static const std::vector<std::string> fields = {
      "/collective",
      "/ranks_per_node",
      "/segment_bytes",
      "/slice_bytes",
      "/straggler_ms",
      "/ps/servers",
      "/hierarchical/inter",
      "/network/node",
      "/network/intra_node",
      "/network/intra_node/bandwidth",
      "/network/intra_node/latency",
      "/network/inter_node",
      "/network/inter_node/bandwidth",
      "/network/inter_node/latency",
  };
  return fields;
}

namespace {

// "/ps/servers" -> "ps.servers", as the label shows it.
std::string dotted(const std::string& pointer) {
  std::string out = pointer.substr(1);
  for (char& c : out) {
    if (c == '/') c = '.';
  }
  return out;
}

}  // namespace

std::vector<SweepPoint> expand_sweeps(const nlohmann::json& document) {
  struct Axis {
    std::string pointer;
    const nlohmann::json* values;
  };
  std::vector<Axis> axes;
  std::size_t points = 1;
  if (document.is_object()) {
    for (const std::string& field : sweepable_fields()) {
      // Inside a swept list ("/network/inter_node": [...]) nothing more sweeps.
      bool inside = false;
      for (const Axis& a : axes) inside = inside || field.rfind(a.pointer + "/", 0) == 0;
      if (inside) continue;
      const nlohmann::json::json_pointer p(field);
      if (!document.contains(p)) continue;
      const nlohmann::json& v = document.at(p);
      if (!v.is_array()) continue;
      if (v.empty()) throw ConfigError(field, "an empty list sweeps nothing: give values or a single value");
      refuse_repeats(v, field);
      points *= v.size();
      if (points > kMaxSweepPoints) {
        throw ConfigError(field, "the sweeps make more than " + std::to_string(kMaxSweepPoints) +
                                     " combinations");
      }
      axes.push_back({field, &v});
    }
  }
  std::vector<SweepPoint> out;
  for (std::size_t k = 0; k < points; ++k) {
    SweepPoint point;
    point.document = document;
    // The last axis varies fastest.
    std::size_t rest = k;
    std::vector<std::size_t> index(axes.size());
    for (std::size_t a = axes.size(); a-- > 0;) {
      index[a] = rest % axes[a].values->size();
      rest /= axes[a].values->size();
    }
    for (std::size_t a = 0; a < axes.size(); ++a) {
      const nlohmann::json& value = (*axes[a].values)[index[a]];
      point.document[nlohmann::json::json_pointer(axes[a].pointer)] = value;
      if (!point.label.empty()) point.label += ' ';
      point.label += dotted(axes[a].pointer);
      point.label += '=';
      point.label += value.dump();
      point.taken.emplace_back(axes[a].pointer, index[a]);
    }
    out.push_back(std::move(point));
  }
  return out;
}

std::string sweep_pointer(const SweepPoint& point, const std::string& field) {
  for (const auto& [pointer, index] : point.taken) {
    if (field.rfind(pointer, 0) == 0 &&
        (field.size() == pointer.size() || field[pointer.size()] == '/')) {
      return pointer + "/" + std::to_string(index) + field.substr(pointer.size());
    }
  }
  return field;
}

Scenario parse_sweep_point(const SweepPoint& point) {
  Scenario scenario = parse_scenario(point.document);
  for (const auto& taken : point.taken) {
    scenario.collective_swept = scenario.collective_swept || taken.first == "/collective";
  }
  return scenario;
}

}  // namespace gradex
