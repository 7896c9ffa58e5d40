// Named machines, so a scenario can say "network": {"node": "dgx_h100"}
// instead of its GPUs per node, its two links and where its NICs sit.
// Each is built from link presets (config/link_presets.h), with the
// datasheet that fixes its shape beside it in node_presets.cpp.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gradex {

struct NodePreset {
  std::string_view name;
  std::string_view hardware;
  int gpus = 1;                // ranks per node
  std::string_view intra_node; // link preset between the node's GPUs
  std::string_view inter_node; // link preset of each NIC
  bool nic_per_node = false;   // false: one NIC per GPU (rail-optimised)
  // Link preset of the node's switch when it can sum (NVLS), for the
  // in_network scheme on one node; empty when it cannot.
  std::string_view reducing_switch;
};

const std::vector<NodePreset>& node_presets();
// Throws ConfigError naming `field` and listing the known presets.
const NodePreset& find_node_preset(std::string_view name, const std::string& field);

}  // namespace gradex
