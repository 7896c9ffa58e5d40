#include "config/node_presets.h"

#include "config/preset_lookup.h"

namespace gradex {

const std::vector<NodePreset>& node_presets() {
  static const std::vector<NodePreset> presets = {
      // NVIDIA DGX A100 datasheet: 8x A100 SXM4 on 6 NVSwitches; 8
      // single-port ConnectX-6 VPI HDR InfiniBand (200 Gb/s) for the
      // compute fabric, one per GPU.
      // (The A100's NVSwitch has no in-switch reduction: NVLS is Hopper's.)
      {"dgx_a100", "DGX A100: 8 A100 GPUs on NVSwitch, one 200 Gb/s HDR NIC per GPU", 8,
       "a100_nvlink", "ib_hdr_200g", false, ""},
      // NVIDIA DGX H100 datasheet: 8x H100 SXM5 on 4 NVSwitches; 8
      // single-port ConnectX-7 VPI (400 Gb/s NDR InfiniBand) for the
      // compute fabric, one per GPU.
      {"dgx_h100", "DGX H100: 8 H100 GPUs on NVSwitch, one 400 Gb/s NDR NIC per GPU", 8,
       "h100_nvlink", "ib_ndr_400g", false, "h100_nvls"},
  };
  return presets;
}

const NodePreset& find_node_preset(std::string_view name, const std::string& field) {
  return find_preset(node_presets(), name, field, "node");
}

}  // namespace gradex
