// The file `gradex tune` writes and a scenario's "auto": {"table": PATH}
// reads: per worker count and size, the fastest scheme and every
// candidate's measured time, with where and when they were measured.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/tuned_table.h"

namespace gradex {

// One tuned size: every candidate's median time over the rounds.
struct TunedSize {
  int workers = 0;
  std::size_t bytes = 0;
  std::map<std::string, double> seconds;  // scheme -> median seconds
};

// The table document: "choices" (the fastest per size, with the times
// behind it), the transport, and `about` (provenance, rounds, scenario).
nlohmann::json tuned_table_json(const std::string& transport, const std::vector<TunedSize>& sizes,
                                const nlohmann::json& about);
// The fastest scheme of one tuned size (ties: the first by name).
std::string fastest(const TunedSize& size);
// The schemes of `order` (in that order) within `margin` of the fastest
// (time <= (1 + margin) x its time) at one size at least: those worth
// measuring again.
std::vector<std::string> contenders(const std::vector<TunedSize>& sizes,
                                    const std::vector<std::string>& order, double margin);

// Reads a table; ConfigError naming `field` and the file's JSON pointer of
// the value at fault.
TunedTable load_tuned_table(const std::filesystem::path& path, const std::string& field);

}  // namespace gradex
