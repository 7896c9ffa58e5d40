#include "config/link_presets.h"

#include "config/preset_lookup.h"

namespace gradex {

// Every rate is one direction of a full-duplex link, in bytes per second,
// from the vendor's datasheet or the standard (the source beside each). A
// datasheet's "900 GB/s" for NVLink counts both directions; the NIC model
// (docs/architecture.md) books each direction on its own, so it is halved
// here.
//
// The GPU fabrics and InfiniBand also carry protocols (common/topology.h:
// a per-message cost and the share of the rate the payload gets), taken
// from published nccl-tests results and NCCL's own tuning model; each
// figure's source is beside it, and docs/calibration.md lists the
// published points they reproduce (tests/calibration_test.cpp checks
// them). Presets without protocols move every byte at the full rate after
// a plain latency: no published figure calibrates them yet.
namespace {

// NCCL's tuning model (src/graph/tuning.cc of NCCL 2.8, hwLat): one ring
// step over NVLink costs 0.47 us with the LL protocol and 3.4 us with
// Simple, and LL moves a quarter of Simple's bandwidth ("busBw *= 1.0/4.0"
// for the ring's LL).
constexpr double kNvlinkLlStep = 0.47e-6;
constexpr double kNvlinkSimpleStep = 3.4e-6;
constexpr double kLlShareOfSimple = 0.25;

// A collective's launch (LinkSpec::launch_seconds, LinkProtocol's):
// NCCL's tuning model (the same tuning.cc, baseLat) starts a ring with the
// LL protocol at 3.6 us and with Simple at 8.4 us, whatever the links. A
// collective takes one protocol for all its messages (Scheme::
// protocol_choice), so on 8 GPUs its ring at 8 bytes is LL's 3.6 + 14 x
// 0.47 = 10.2 us, and at 1 GiB Simple's, launch 8.4 us included.
constexpr double kNcclLaunch = 3.6e-6;
constexpr double kNcclSimpleLaunch = 8.4e-6;

std::vector<LinkProtocol> nvlink_protocols(double simple_efficiency) {
  return {{"LL", kNvlinkLlStep, simple_efficiency * kLlShareOfSimple, kNcclLaunch},
          {"Simple", kNvlinkSimpleStep, simple_efficiency, kNcclSimpleLaunch}};
}

// InfiniBand through NCCL's network proxy. LL's per-message cost is fitted
// to the one published 8-byte point, nccl-tests issue #150 (2 nodes x 1
// A100-80GB, one HDR NIC each): 8-byte all_reduce_perf 19.90 us out of
// place, which a 2-rank ring spends on LL's launch and 2 messages. Simple's
// costs what NCCL's tuning model (the same tuning.cc, hwLat for NET, ring)
// puts it above LL's: 14.0 - 2.7 us a step more.
constexpr double kIbLlMessageCost = (19.90e-6 - kNcclLaunch) / 2;
constexpr double kIbSimpleMessageCost = kIbLlMessageCost + (14.0e-6 - 2.7e-6);

// `simple_efficiency`: the share of the NIC's rate Simple delivers; LL a
// quarter of it, as over NVLink.
std::vector<LinkProtocol> infiniband_protocols(double simple_efficiency) {
  return {{"LL", kIbLlMessageCost, simple_efficiency * kLlShareOfSimple, kNcclLaunch},
          {"Simple", kIbSimpleMessageCost, simple_efficiency, kNcclSimpleLaunch}};
}

}  // namespace

const std::vector<LinkPreset>& link_presets() {
  static const std::vector<LinkPreset> presets = {
      // NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020): NVLink 3
      // carries 25 GB/s per direction per link.
      {"nvlink3_link", "one NVLink 3.0 link, 25 GB/s one way",
       {25e9, 5e-6}},
      // NVIDIA A100 datasheet: "NVLink 600 GB/s" over 12 links, both ways.
      // Simple's efficiency: 8x A100-SXM4-80GB all_reduce_perf reaches a
      // ring bus bandwidth of 228.1-231.6 GB/s at 1-8 GB (Azure
      // AI-benchmarking-guide, ND A100 v4 results, NCCL 2.18.5), "~230GB/s"
      // in NVIDIA's words (nccl-tests issue #149): 230 / 300.
      {"a100_nvlink", "an A100's 12 NVLink 3.0 links through NVSwitch: 600 GB/s both ways = 300 GB/s one way",
       {300e9, 0, nvlink_protocols(230.0 / 300.0), kNcclLaunch}},
      // NVIDIA H100 datasheet (SXM): "NVLink 900 GB/s" over 18 links, both ways.
      // Simple's efficiency: 8x H100 reach "370GB/s" ring bus bandwidth
      // with NCCL_ALGO=RING (NVIDIA, nccl-tests issue #212): 370 / 450.
      {"h100_nvlink", "an H100's 18 NVLink 4.0 links through NVSwitch: 900 GB/s both ways = 450 GB/s one way",
       {450e9, 0, nvlink_protocols(370.0 / 450.0), kNcclLaunch}},
      // PCI-SIG PCIe 4.0 base specification: 16 GT/s per lane, x16.
      {"pcie4", "PCIe Gen4 x16: 16 GT/s x 16 lanes = 32 GB/s one way", {32e9, 10e-6}},
      // PCI-SIG PCIe 5.0 base specification: 32 GT/s per lane, x16.
      {"pcie5", "PCIe Gen5 x16: 32 GT/s x 16 lanes = 64 GB/s one way", {64e9, 10e-6}},
      // IEEE 802.3ab (1000BASE-T).
      {"ethernet_1g", "1 Gbit/s Ethernet = 0.125 GB/s one way", {0.125e9, 50e-6}},
      // IEEE 802.3ba/bj (100GBASE-R).
      {"ethernet_100g", "100 Gbit/s Ethernet = 12.5 GB/s one way", {12.5e9, 10e-6}},
      // NVIDIA ConnectX-6 datasheet: HDR InfiniBand, 200 Gb/s per port.
      // Efficiency: "24GB/s is the peak performance per 200G NIC" (NVIDIA,
      // nccl-tests issue #119): 24 / 25.
      {"ib_hdr_200g", "200 Gbit/s InfiniBand HDR (ConnectX-6) = 25 GB/s one way",
       {25e9, 0, infiniband_protocols(24.0 / 25.0), kNcclLaunch}},
      // NVIDIA ConnectX-7 datasheet: NDR InfiniBand, 400 Gb/s per port.
      // Efficiency: "46-48GB/s per NIC" (NVIDIA, nccl-tests issue #290): 48 /
      // 50. The per-message costs are HDR's (the same proxy path; no
      // published 8-byte NDR point was found).
      {"ib_ndr_400g", "400 Gbit/s InfiniBand NDR (ConnectX-7) = 50 GB/s one way",
       {50e9, 0, infiniband_protocols(48.0 / 50.0), kNcclLaunch}},
      // Switches that reduce (`network.switch`, the in_network scheme): the
      // rate is what each of the switch's ports (one per GPU) carries,
      // payload bytes.
      // NVLink SHARP on H100 NVSwitch: "On 8 GPUs, you should reach a peak
      // busBw of ~480GB/s (algbw ~275GB/s)" (NVIDIA, nccl-tests issue #212).
      // NCCL's NVLS sends each slice's sum to the GPU that owns it, which
      // multicasts it back (Topology::add_switch): 1 + 1/8 of the payload
      // per port on 8 GPUs, so 275 x 9/8 = 309.4 GB/s per port. Fitted at 8
      // GPUs; at 5, 6 and 7 it gives algbw 258, 265 and 271 GB/s, where a
      // user measured 258, 265 and 270 (nccl issue #1455). The per-message
      // cost is assumed to be NVLink's Simple step (no published
      // small-message NVLS point was found).
      {"h100_nvls", "H100 NVSwitch reducing in the switch (NVLink SHARP): 309.4 GB/s per port, algbw 275 GB/s on 8 GPUs",
       {275e9 * 9 / 8, 0, {{"Simple", kNvlinkSimpleStep, 1.0}}}},
      // SHARP in an NDR InfiniBand switch (Quantum-2): assumed to sum at
      // what the NIC delivers, ib_ndr_400g's 48 GB/s, at the per-message
      // cost the 8-byte point gives a NIC; one protocol, named Simple, the
      // only one NCCL's in-network reduction runs. No published nccl-tests
      // SHARP figure was found to calibrate it.
      {"ib_ndr_sharp", "NDR InfiniBand switch reducing in the network (SHARP), assumed at the NIC's 48 GB/s",
       {48e9, 0, {{"Simple", kIbLlMessageCost, 1.0}}}},
  };
  return presets;
}

LinkSpec find_link_preset(std::string_view name, const std::string& field) {
  return find_preset(link_presets(), name, field, "link").link;
}

}  // namespace gradex
