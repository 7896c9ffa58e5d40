// Sweeps over scenario fields: where a sweepable field holds a list, the
// scenario stands for one run per value, and for one per combination when
// several do ("ps": {"servers": [1, 2, 4]}, "segment_bytes": ["256KiB",
// "1MiB"], "network": {"inter_node": {"bandwidth": ["10Gbps", "100Gbps"]}}).
// `workers` and `sizes` are lists of their own and sweep inside each point.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/scenario.h"

namespace gradex {

// The fields that may hold a list, as JSON pointers.
const std::vector<std::string>& sweepable_fields();
// At most this many points, so that a typo cannot ask for millions of runs.
inline constexpr std::size_t kMaxSweepPoints = 256;

struct SweepPoint {
  nlohmann::json document;  // the scenario with one value at each swept field
  std::string label;        // "ps.servers=2 segment_bytes=\"256KiB\"", empty without sweeps
  // For each swept field, its pointer and the index of the value taken.
  std::vector<std::pair<std::string, std::size_t>> taken;
};

// Every point of `document`'s sweeps, in the order the lists give (the
// first swept field varies slowest). One point, the document itself, when
// nothing sweeps. Throws ConfigError naming a list that is empty or the
// field when the combinations exceed kMaxSweepPoints.
std::vector<SweepPoint> expand_sweeps(const nlohmann::json& document);

// The scenario of one point (parse_scenario), knowing which of its fields
// were swept (Scenario::collective_swept).
Scenario parse_sweep_point(const SweepPoint& point);

// The pointer a point's error names, in the sweep's terms: a value taken
// from a list is named with its index ("/ps/servers/1").
std::string sweep_pointer(const SweepPoint& point, const std::string& field);

}  // namespace gradex
