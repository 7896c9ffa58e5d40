#include "config/link_presets.h"

#include "common/errors.h"

namespace gradex {

const std::vector<LinkPreset>& link_presets() {
  static const std::vector<LinkPreset> presets = {
      {"nvlink3", "NVLink 3.0, 25 GB/s one way (the PS example of claims A1-A3)", {25e9, 5e-6}},
      {"nvlink4", "NVLink 4.0 (H100), 900 GB/s both ways = 450 GB/s one way", {450e9, 5e-6}},
      {"pcie4", "PCIe Gen4 x16, 64 GB/s one way", {64e9, 10e-6}},
      {"ethernet_1g", "1 Gbps Ethernet = 0.125 GB/s", {0.125e9, 50e-6}},
      {"ib_hdr_200g", "200 Gbps InfiniBand HDR = 25 GB/s", {25e9, 5e-6}},
      {"ib_ndr_400g", "400 Gbps InfiniBand NDR = 50 GB/s", {50e9, 5e-6}},
  };
  return presets;
}

LinkSpec find_link_preset(std::string_view name, const std::string& field) {
  std::string known;
  for (const LinkPreset& p : link_presets()) {
    if (p.name == name) return p.link;
    known += (known.empty() ? "" : ", ") + std::string(p.name);
  }
  throw ConfigError(field, "unknown link preset '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace gradex
