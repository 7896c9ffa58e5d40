#include "config/link_presets.h"

#include "common/errors.h"

namespace gradex {

// Every rate is one direction of a full-duplex link, in bytes per second,
// from the vendor's datasheet or the standard (the source beside each). A
// datasheet's "900 GB/s" for NVLink counts both directions; the NIC model
// (docs/architecture.md) books each direction on its own, so it is halved
// here. Latencies are one hop's start-up cost as the alpha-beta model takes
// it, not a measured figure: calibrating them is the protocol model's work.
const std::vector<LinkPreset>& link_presets() {
  static const std::vector<LinkPreset> presets = {
      // NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020): NVLink 3
      // carries 25 GB/s per direction per link.
      {"nvlink3_link", "one NVLink 3.0 link, 25 GB/s one way",
       {25e9, 5e-6}},
      // NVIDIA A100 datasheet: "NVLink 600 GB/s" over 12 links, both ways.
      {"a100_nvlink", "an A100's 12 NVLink 3.0 links through NVSwitch: 600 GB/s both ways = 300 GB/s one way",
       {300e9, 5e-6}},
      // NVIDIA H100 datasheet (SXM): "NVLink 900 GB/s" over 18 links, both ways.
      {"h100_nvlink", "an H100's 18 NVLink 4.0 links through NVSwitch: 900 GB/s both ways = 450 GB/s one way",
       {450e9, 5e-6}},
      // PCI-SIG PCIe 4.0 base specification: 16 GT/s per lane, x16.
      {"pcie4", "PCIe Gen4 x16: 16 GT/s x 16 lanes = 32 GB/s one way", {32e9, 10e-6}},
      // PCI-SIG PCIe 5.0 base specification: 32 GT/s per lane, x16.
      {"pcie5", "PCIe Gen5 x16: 32 GT/s x 16 lanes = 64 GB/s one way", {64e9, 10e-6}},
      // IEEE 802.3ab (1000BASE-T).
      {"ethernet_1g", "1 Gbit/s Ethernet = 0.125 GB/s one way", {0.125e9, 50e-6}},
      // IEEE 802.3ba/bj (100GBASE-R).
      {"ethernet_100g", "100 Gbit/s Ethernet = 12.5 GB/s one way", {12.5e9, 10e-6}},
      // NVIDIA ConnectX-6 datasheet: HDR InfiniBand, 200 Gb/s per port.
      {"ib_hdr_200g", "200 Gbit/s InfiniBand HDR (ConnectX-6) = 25 GB/s one way", {25e9, 5e-6}},
      // NVIDIA ConnectX-7 datasheet: NDR InfiniBand, 400 Gb/s per port.
      {"ib_ndr_400g", "400 Gbit/s InfiniBand NDR (ConnectX-7) = 50 GB/s one way", {50e9, 5e-6}},
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
