// Finding a preset by name in a list of them (links, nodes), with the
// error every such look-up gives: the field, the name, the known names.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/errors.h"

namespace gradex {

template <typename Preset>
const Preset& find_preset(const std::vector<Preset>& presets, std::string_view name,
                          const std::string& field, std::string_view kind) {
  std::string known;
  for (const Preset& p : presets) {
    if (p.name == name) return p;
    known += (known.empty() ? "" : ", ") + std::string(p.name);
  }
  throw ConfigError(field, "unknown " + std::string(kind) + " preset '" + std::string(name) +
                               "' (known: " + known + ")");
}

}  // namespace gradex
