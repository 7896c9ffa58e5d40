// Named links with published one-way rates, so scenarios can say
// "inter_node": "ib_hdr_200g" instead of a bandwidth. Rates are one
// direction (the NIC model is full duplex), each with its source in
// link_presets.cpp; latencies are one hop's start-up cost in the model.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/topology.h"

namespace gradex {

struct LinkPreset {
  std::string_view name;
  std::string_view hardware;
  LinkSpec link;
};

const std::vector<LinkPreset>& link_presets();
// Throws ConfigError naming `field` and listing the known presets.
LinkSpec find_link_preset(std::string_view name, const std::string& field);

}  // namespace gradex
