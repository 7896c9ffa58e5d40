// Scenario parsing: every shipped scenario is valid, and malformed ones fail
// with an error that names the JSON pointer of the offending value.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/errors.h"
#include "common/memory_budget.h"
#include "config/json_file.h"
#include "config/link_presets.h"
#include "config/node_presets.h"
#include "config/scenario.h"
#include "config/sweeps.h"
#include "runner/group_run.h"
#include "runner/plan.h"
#include "train/train_job.h"

namespace gradex {
namespace {

TEST(Scenario, EveryShippedScenarioParsesAndPlans) {
  int seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(GRADEX_SOURCE_DIR "/scenarios")) {
    if (entry.path().extension() != ".json") continue;
    SCOPED_TRACE(entry.path().string());
    EXPECT_NO_THROW({
      // Every point of a scenario that sweeps.
      std::ifstream in(entry.path());
      for (const SweepPoint& point : expand_sweeps(nlohmann::json::parse(in))) {
        RunPlan plan = plan_runs(parse_sweep_point(point));
        // PS consistency training runs (workers, model) pairs, not schemes.
        const Scenario& s = plan.scenario;
        const bool consistency = s.training && !s.training->consistency.empty();
        EXPECT_NE(plan.runs.empty(), !consistency);
        if (consistency) {
          EXPECT_GT(group_size(plan), s.ps_servers);
        }
      }
    });
    ++seen;
  }
  EXPECT_GE(seen, 2);
}

TEST(Scenario, DefaultsAndSweeps) {
  const auto s = parse_scenario(nlohmann::json::parse(R"({
    "name": "t", "workers": [2, 3], "sizes": {"from": "1KiB", "to": "16KiB", "factor": 4},
    "network": {"inter_node": {"bandwidth": "10Gbps", "latency": "5us"}}
  })"));
  EXPECT_EQ(s.workers, (std::vector<int>{2, 3}));
  EXPECT_EQ(s.sizes, (std::vector<std::size_t>{1024, 4096, 16384}));
  EXPECT_TRUE(s.all_schemes);
  EXPECT_TRUE(s.network.shaped);
  EXPECT_DOUBLE_EQ(s.network.inter_node.bytes_per_second, 1.25e9);
  EXPECT_DOUBLE_EQ(s.network.inter_node.latency_seconds, 5e-6);
  EXPECT_TRUE(s.network.intra_node.unlimited());
  EXPECT_EQ(s.dtype, DType::f32);
  EXPECT_EQ(s.spin, std::chrono::microseconds(100));
  EXPECT_EQ(s.slice_bytes, 0u);
  EXPECT_EQ(scheme_options(parse_scenario(nlohmann::json::parse(
                               R"({"name": "t", "sizes": [4], "slice_bytes": "2MiB"})")),
                           4)
                .slice_bytes,
            std::size_t{2} << 20);
  // A simulated PS takes as many servers as it takes workers (a server on
  // each of 4,096 simulated workers); real transports at most kMaxRealRanks
  // (the malformed cases below).
  EXPECT_EQ(parse_scenario(nlohmann::json::parse(
                               R"({"name": "t", "sizes": [4], "transport": "sim", "ps": {"servers": 4096}})"))
                .ps_servers,
            4096);
  EXPECT_EQ(parse_scenario(nlohmann::json::parse(R"({"name": "t", "sizes": [4], "spin_us": 0})"))
                .spin,
            std::chrono::microseconds(0));
}

struct Malformed {
  const char* label;
  const char* json;
  const char* field;  // expected JSON pointer in the error
};

class MalformedScenario : public ::testing::TestWithParam<Malformed> {};

TEST_P(MalformedScenario, NamesTheField) {
  const Malformed& m = GetParam();
  try {
    plan_runs(parse_scenario(nlohmann::json::parse(m.json)));
    FAIL() << "accepted: " << m.json;
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), m.field) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, MalformedScenario,
    ::testing::Values(
        Malformed{"not_object", R"([1, 2])", "/"},
        Malformed{"no_name", R"({"sizes": [4]})", "/name"},
        Malformed{"unknown_key", R"({"name": "x", "sizes": [4], "wokers": 4})", "/wokers"},
        Malformed{"workers_zero", R"({"name": "x", "sizes": [4], "workers": 0})", "/workers"},
        Malformed{"workers_type", R"({"name": "x", "sizes": [4], "workers": "four"})", "/workers"},
        Malformed{"workers_elem", R"({"name": "x", "sizes": [4], "workers": [2, -1]})", "/workers/1"},
        Malformed{"no_sizes", R"({"name": "x"})", "/sizes"},
        Malformed{"size_unit", R"({"name": "x", "sizes": [4, "3 parsecs"]})", "/sizes/1"},
        Malformed{"sweep_order", R"({"name": "x", "sizes": {"from": "1MiB", "to": "1KiB"}})", "/sizes/to"},
        Malformed{"sweep_key", R"({"name": "x", "sizes": {"from": 1, "to": 2, "step": 2}})", "/sizes/step"},
        Malformed{"dtype", R"({"name": "x", "sizes": [4], "dtype": "f8"})", "/dtype"},
        Malformed{"op", R"({"name": "x", "sizes": [4], "op": "prod"})", "/op"},
        Malformed{"iters", R"({"name": "x", "sizes": [4], "iters": 0})", "/iters"},
        Malformed{"transport", R"({"name": "x", "sizes": [4], "transport": "carrier-pigeon"})", "/transport"},
        Malformed{"scheme_name", R"({"name": "x", "sizes": [4], "schemes": ["ring", "rnig"]})", "/schemes/1"},
        Malformed{"schemes_type", R"({"name": "x", "sizes": [4], "schemes": 3})", "/schemes"},
        Malformed{"ps_key", R"({"name": "x", "sizes": [4], "ps": {"server": 2}})", "/ps/server"},
        Malformed{"ps_servers_real", R"({"name": "x", "sizes": [4], "ps": {"servers": 1025}})", "/ps/servers"},
        Malformed{"ps_servers_sim", R"({"name": "x", "sizes": [4], "transport": "sim", "ps": {"servers": 65537}})", "/ps/servers"},
        Malformed{"ps_placement", R"({"name": "x", "sizes": [4], "ps": {"placement": "dedicated"}})", "/ps/placement"},
        Malformed{"net_empty", R"({"name": "x", "sizes": [4], "network": {}})", "/network"},
        Malformed{"net_bw", R"({"name": "x", "sizes": [4], "network": {"inter_node": {"bandwidth": "fast"}}})", "/network/inter_node/bandwidth"},
        Malformed{"net_missing_bw", R"({"name": "x", "sizes": [4], "network": {"inter_node": {"latency": "1us"}}})", "/network/inter_node/bandwidth"},
        Malformed{"net_latency", R"({"name": "x", "sizes": [4], "network": {"inter_node": {"bandwidth": 1e9, "latency": -1}}})", "/network/inter_node/latency"},
        Malformed{"net_key", R"({"name": "x", "sizes": [4], "network": {"inter_node": {"bandwidth": 1e9, "jitter": 1}}})", "/network/inter_node/jitter"},
        Malformed{"spine_leaf", R"({"name": "x", "sizes": [4], "network": {"inter_node": "ib_hdr_200g", "spine": {"oversubscription": 2}}})", "/network/spine/nodes_per_leaf"},
        Malformed{"spine_leaf_zero", R"({"name": "x", "sizes": [4], "network": {"inter_node": "ib_hdr_200g", "spine": {"nodes_per_leaf": 0}}})", "/network/spine/nodes_per_leaf"},
        Malformed{"spine_ratio", R"({"name": "x", "sizes": [4], "network": {"inter_node": "ib_hdr_200g", "spine": {"nodes_per_leaf": 4, "oversubscription": 0.5}}})", "/network/spine/oversubscription"},
        Malformed{"spine_key", R"({"name": "x", "sizes": [4], "network": {"inter_node": "ib_hdr_200g", "spine": {"nodes_per_leaf": 4, "ratio": 2}}})", "/network/spine/ratio"},
        Malformed{"spine_unshaped", R"({"name": "x", "sizes": [4], "network": {"intra_node": "ib_hdr_200g", "spine": {"nodes_per_leaf": 4}}})", "/network/spine"},
        Malformed{"spin", R"({"name": "x", "sizes": [4], "spin_us": -5})", "/spin_us"},
        Malformed{"slice", R"({"name": "x", "sizes": [4], "slice_bytes": "lots"})", "/slice_bytes"},
        Malformed{"segment", R"({"name": "x", "sizes": [4], "segment_bytes": 0})", "/segment_bytes"},
        Malformed{"timeout", R"({"name": "x", "sizes": [4], "timeout_ms": 0})", "/timeout_ms"},
        Malformed{"straggler_negative", R"({"name": "x", "sizes": [4], "straggler_ms": -1})", "/straggler_ms"},
        Malformed{"straggler_past_timeout", R"({"name": "x", "sizes": [4], "timeout_ms": 100, "straggler_ms": 100})", "/straggler_ms"},
        Malformed{"too_many_real", R"({"name": "x", "sizes": [4], "workers": [4, 2048]})", "/workers/1"},
        Malformed{"hier_inter", R"({"name": "x", "sizes": [4], "hierarchical": {"inter": "ps"}})", "/hierarchical/inter"},
        // Links outside 1 KB/s-100 TB/s or 0-10 s: a message that would take
        // hours, or times that overflow to no delay at all.
        Malformed{"net_too_slow", R"({"name": "x", "sizes": [4], "network": {"inter_node": {"bandwidth": "100B/s"}}})", "/network/inter_node/bandwidth"},
        Malformed{"net_tiny_rate", R"({"name": "x", "sizes": [4], "network": {"inter_node": {"bandwidth": 1e-300}}})", "/network/inter_node/bandwidth"},
        Malformed{"net_too_fast", R"({"name": "x", "sizes": [4], "network": {"intra_node": {"bandwidth": "1000TB/s"}}})", "/network/intra_node/bandwidth"},
        Malformed{"net_latency_1e10", R"({"name": "x", "sizes": [4], "network": {"inter_node": {"bandwidth": 1e9, "latency": "1e10s"}}})", "/network/inter_node/latency"},
        Malformed{"net_latency_1e300", R"({"name": "x", "sizes": [4], "network": {"inter_node": {"bandwidth": 1e9, "latency": 1e300}}})", "/network/inter_node/latency"},
        Malformed{"net_protocols_no_preset", R"({"name": "x", "sizes": [4], "network": {"inter_node": {"bandwidth": "1GB/s", "protocols": false}}})", "/network/inter_node/protocols"},
        Malformed{"net_protocols_type", R"({"name": "x", "sizes": [4], "network": {"inter_node": {"preset": "ib_hdr_200g", "protocols": "no"}}})", "/network/inter_node/protocols"},
        Malformed{"node_unknown", R"({"name": "x", "sizes": [4], "network": {"node": "dgx_z"}})", "/network/node"},
        Malformed{"node_and_link", R"({"name": "x", "sizes": [4], "network": {"node": "dgx_h100", "inter_node": "ib_hdr_200g"}})", "/network/inter_node"},
        Malformed{"node_and_nic", R"({"name": "x", "sizes": [4], "network": {"node": "dgx_a100", "nic_per_node": true}})", "/network/nic_per_node"},
        Malformed{"node_and_ranks", R"({"name": "x", "sizes": [4], "ranks_per_node": 4, "network": {"node": "dgx_a100"}})", "/ranks_per_node"},
        Malformed{"node_type", R"({"name": "x", "sizes": [4], "network": {"node": 8}})", "/network/node"},
        Malformed{"net_preset_latency", R"({"name": "x", "sizes": [4], "network": {"inter_node": {"preset": "ib_hdr_200g", "latency": "11s"}}})", "/network/inter_node/latency"},
        // Whole elements only: 4097 B of f32 would silently run as 4096.
        Malformed{"size_partial_f32", R"({"name": "x", "sizes": [4096, 4097]})", "/sizes/1"},
        Malformed{"size_partial_f64", R"({"name": "x", "sizes": [4], "dtype": "f64"})", "/sizes/0"},
        Malformed{"sweep_partial", R"({"name": "x", "sizes": {"from": 1023, "to": 4096}})", "/sizes/from"},
        // Buffers beyond any machine's memory are refused before running.
        Malformed{"size_terabyte", R"({"name": "x", "sizes": ["1TB"], "workers": 2})", "/sizes/0"},
        Malformed{"size_max", R"({"name": "x", "sizes": [4, 18446744073709551612]})", "/sizes/1"},
        Malformed{"sweep_terabyte", R"({"name": "x", "sizes": {"from": "1GiB", "to": "1TiB"}})", "/sizes/to"}),
    [](const auto& info) { return std::string(info.param.label); });

// A node preset stands for its GPUs per node, both links and one NIC per
// GPU, each the same as the link presets it names.
TEST(Scenario, ANodePresetSetsRanksLinksAndNics) {
  const auto s = parse_scenario(nlohmann::json::parse(
      R"({"name": "t", "sizes": [4], "network": {"node": "dgx_h100"}})"));
  EXPECT_EQ(s.ranks_per_node, 8);
  EXPECT_TRUE(s.network.shaped);
  EXPECT_FALSE(s.network.nic_per_node);
  EXPECT_EQ(s.network.node, "dgx_h100");
  EXPECT_DOUBLE_EQ(s.network.intra_node.bytes_per_second,
                   find_link_preset("h100_nvlink", "").bytes_per_second);
  EXPECT_DOUBLE_EQ(s.network.inter_node.bytes_per_second,
                   find_link_preset("ib_ndr_400g", "").bytes_per_second);
  EXPECT_EQ(s.network.inter_node.protocols.size(), 2u);  // LL and Simple
  const auto a = parse_scenario(nlohmann::json::parse(
      R"({"name": "t", "sizes": [4], "network": {"node": "dgx_a100"}})"));
  EXPECT_DOUBLE_EQ(a.network.intra_node.bytes_per_second,
                   find_link_preset("a100_nvlink", "").bytes_per_second);
  EXPECT_DOUBLE_EQ(a.network.inter_node.bytes_per_second,
                   find_link_preset("ib_hdr_200g", "").bytes_per_second);
  for (const NodePreset& p : node_presets()) {
    // Every preset's links exist (a typo would only surface when used).
    EXPECT_NO_THROW(find_link_preset(p.intra_node, std::string(p.name)));
    EXPECT_NO_THROW(find_link_preset(p.inter_node, std::string(p.name)));
  }
}

// A preset's link pinned to one of its protocols (as NCCL_PROTO pins
// NCCL's): that protocol alone, with its launch; a name the preset does not
// have is refused with the names it has.
TEST(Scenario, APresetsLinkCanBePinnedToOneOfItsProtocols) {
  const auto s = parse_scenario(nlohmann::json::parse(R"({"name": "t", "sizes": [4],
      "network": {"intra_node": {"preset": "h100_nvlink", "protocols": "Simple"},
                  "inter_node": {"preset": "ib_ndr_400g", "protocols": "LL"}}})"));
  const LinkSpec nvlink = find_link_preset("h100_nvlink", "");
  ASSERT_EQ(s.network.intra_node.protocols.size(), 1u);
  EXPECT_STREQ(s.network.intra_node.protocols[0].name, "Simple");
  EXPECT_DOUBLE_EQ(s.network.intra_node.launch_seconds,
                   nvlink.with_protocol("Simple").launch_seconds);
  EXPECT_DOUBLE_EQ(s.network.intra_node.bytes_per_second, nvlink.bytes_per_second);
  ASSERT_EQ(s.network.inter_node.protocols.size(), 1u);
  EXPECT_STREQ(s.network.inter_node.protocols[0].name, "LL");
  try {
    parse_scenario(nlohmann::json::parse(R"({"name": "t", "sizes": [4],
        "network": {"intra_node": {"preset": "h100_nvlink", "protocols": "LL128"}}})"));
    FAIL() << "LL128 was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "/network/intra_node/protocols");
    EXPECT_NE(std::string(e.what()).find("has no protocol 'LL128' (it has LL, Simple)"),
              std::string::npos)
        << e.what();
  }
}

// The plan of a scenario written inline, and the field its refusal names.
RunPlan plan(const std::string& json) {
  return plan_runs(parse_scenario(nlohmann::json::parse(json)));
}
std::string error(const std::string& json) {
  try {
    plan(json);
  } catch (const ConfigError& e) {
    return e.field();
  }
  return "no error";
}

// in_network_hierarchical's two switches: a port per GPU on its own node
// (the node preset's NVLS, or network.node_switch), then a port per rail
// on nodes of their own between the nodes (network.switch), standing for
// the rail's port per node at their summed rate. Each is refused where it
// is missing or, given, where nothing uses it.
TEST(Scenario, TwoLevelInNetworkReductionNeedsBothSwitches) {
  const RunPlan dgx = plan(R"({"name": "t", "sizes": [4096], "workers": 16, "transport": "sim",
      "schemes": ["in_network_hierarchical"],
      "network": {"node": "dgx_h100", "switch": "ib_ndr_sharp"}})");
  ASSERT_EQ(dgx.runs.size(), 1u);
  const Topology t = scenario_topology(dgx.scenario, *dgx.runs[0].instance, 16);
  EXPECT_EQ(t.endpoints(), 40);
  ASSERT_EQ(t.switches.size(), 2u);
  EXPECT_EQ(t.switches[0].first, 16);
  EXPECT_TRUE(t.switches[0].in_node);
  EXPECT_EQ(t.switches[1].first, 32);
  EXPECT_FALSE(t.switches[1].in_node);
  EXPECT_TRUE(t.same_node(9, 16 + 9));   // node 1's NVSwitch
  EXPECT_FALSE(t.same_node(1, 16 + 9));
  EXPECT_FALSE(t.same_node(9, 32 + 1));  // a switch of its own, through the NICs
  EXPECT_DOUBLE_EQ(t.link(9, 25).bytes_per_second,
                   find_link_preset("h100_nvls", "").bytes_per_second);
  EXPECT_EQ(t.switches[1].ports, 8);  // rail 1's port is 32 + 1, its 2 nodes' at twice the rate
  EXPECT_DOUBLE_EQ(t.link(33, 9).bytes_per_second,
                   2 * find_link_preset("ib_ndr_sharp", "").bytes_per_second);

  const RunPlan custom = plan(R"({"name": "t", "sizes": [4096], "workers": 8, "transport": "sim",
      "ranks_per_node": 4, "schemes": ["in_network_hierarchical"],
      "network": {"intra_node": "h100_nvlink", "inter_node": "ib_ndr_400g",
                  "node_switch": "h100_nvls", "switch": "ib_ndr_sharp"}})");
  const Topology own = scenario_topology(custom.scenario, *custom.runs[0].instance, 8);
  EXPECT_DOUBLE_EQ(own.link(0, 8).bytes_per_second,
                   find_link_preset("h100_nvls", "").bytes_per_second);

  EXPECT_EQ(error(R"({"name": "t", "sizes": [4096], "workers": 16, "transport": "sim",
      "schemes": ["in_network_hierarchical"], "network": {"node": "dgx_h100"}})"),
            "/network/switch");
  EXPECT_EQ(error(R"({"name": "t", "sizes": [4096], "workers": 16, "transport": "sim",
      "schemes": ["in_network_hierarchical"],
      "network": {"node": "dgx_a100", "switch": "ib_ndr_sharp"}})"),
            "/network/node_switch");
  EXPECT_EQ(error(R"({"name": "t", "sizes": [4096], "workers": 8, "transport": "sim",
      "ranks_per_node": 4, "schemes": ["in_network_hierarchical"],
      "network": {"intra_node": "h100_nvlink", "inter_node": "ib_ndr_400g",
                  "switch": "ib_ndr_sharp"}})"),
            "/network/node_switch");
  // A node preset fixes its switch; a switch nothing uses is refused.
  EXPECT_EQ(error(R"({"name": "t", "sizes": [4096], "workers": 16, "transport": "sim",
      "schemes": ["in_network_hierarchical"], "network": {"node": "dgx_h100",
      "node_switch": "h100_nvls", "switch": "ib_ndr_sharp"}})"),
            "/network/node_switch");
  EXPECT_EQ(error(R"({"name": "t", "sizes": [4096], "workers": 8, "transport": "sim",
      "ranks_per_node": 4, "schemes": ["ring"],
      "network": {"intra_node": "h100_nvlink", "inter_node": "ib_ndr_400g",
                  "node_switch": "h100_nvls"}})"),
            "/network/node_switch");
}

// in_network_tree's one switch: a port per GPU on its own node (the node
// preset's NVLS, or network.node_switch), nothing between the nodes but
// the GPUs' NICs. Refused without a node switch that sums, and with a
// switch between the nodes that nothing of the run uses.
TEST(Scenario, TreeAcrossNodesNeedsOnlyTheNodesSwitch) {
  const RunPlan dgx = plan(R"({"name": "t", "sizes": [4096], "workers": 16, "transport": "sim",
      "schemes": ["in_network_tree"], "network": {"node": "dgx_h100"}})");
  ASSERT_EQ(dgx.runs.size(), 1u);
  const Topology t = scenario_topology(dgx.scenario, *dgx.runs[0].instance, 16);
  EXPECT_EQ(t.endpoints(), 32);
  ASSERT_EQ(t.switches.size(), 1u);
  EXPECT_EQ(t.switches[0].first, 16);
  EXPECT_TRUE(t.switches[0].in_node);
  EXPECT_TRUE(t.same_node(9, 16 + 9));
  EXPECT_FALSE(t.same_node(1, 16 + 9));
  // Across nodes a port does not multicast by itself: the sum comes back
  // through the GPU that carried it, at the switch's whole rate.
  EXPECT_DOUBLE_EQ(t.link(9, 25).bytes_per_second,
                   find_link_preset("h100_nvls", "").bytes_per_second);
  EXPECT_EQ(error(R"({"name": "t", "sizes": [4096], "workers": 16, "transport": "sim",
      "schemes": ["in_network_tree"], "network": {"node": "dgx_a100"}})"),
            "/network/node_switch");
  EXPECT_EQ(error(R"({"name": "t", "sizes": [4096], "workers": 16, "transport": "sim",
      "schemes": ["in_network_tree"], "network": {"node": "dgx_h100", "switch": "ib_ndr_sharp"}})"),
            "/network/switch");
  // Beside a scheme that uses it, the switch between the nodes is taken.
  EXPECT_EQ(plan(R"({"name": "t", "sizes": [4096], "workers": 16, "transport": "sim",
      "schemes": ["in_network_tree", "in_network_hierarchical"],
      "network": {"node": "dgx_h100", "switch": "ib_ndr_sharp"}})").runs.size(), 2u);
}

// in_network's switch ports: on the GPUs' node with the node preset's
// NVLS switch; across nodes only with network.switch (a node's NVSwitch
// does not sum between nodes), on nodes of their own; "all" leaves the
// scheme out where there is no switch, and network.switch without it runs
// nothing and is refused.
TEST(Scenario, InNetworkReductionNeedsASwitchThatSums) {
  const RunPlan one = plan(R"({"name": "t", "sizes": [4096], "workers": 8, "transport": "sim",
      "schemes": ["in_network"], "network": {"node": "dgx_h100"}})");
  ASSERT_EQ(one.runs.size(), 1u);
  const Topology nvls = scenario_topology(one.scenario, *one.runs[0].instance, 8);
  EXPECT_EQ(nvls.endpoints(), 16);
  ASSERT_EQ(nvls.switches.size(), 1u);
  EXPECT_EQ(nvls.switches[0].first, 8);
  EXPECT_EQ(nvls.switches[0].ports, 8);
  EXPECT_TRUE(nvls.same_node(0, 15));  // in the node's NVSwitch
  // The ports multicast the sum themselves, without the trip through its
  // owner GPU that NVLS makes: 8/9 of the rate on 8 GPUs (275 GB/s).
  EXPECT_DOUBLE_EQ(nvls.link(0, 8).bytes_per_second,
                   find_link_preset("h100_nvls", "").bytes_per_second * 8 / 9);
  EXPECT_NEAR(nvls.link(0, 8).bytes_per_second, 275e9, 1e3);
  // On one node the two-level scheme spreads each sum from the switch as
  // in_network does, at the same rate; across nodes (below) the sum comes
  // back through its owner GPU in the scheme's own messages.
  const RunPlan one_two_level = plan(R"({"name": "t", "sizes": [4096], "workers": 8,
      "transport": "sim", "schemes": ["in_network_hierarchical"], "network": {"node": "dgx_h100"}})");
  const Topology node_only =
      scenario_topology(one_two_level.scenario, *one_two_level.runs[0].instance, 8);
  EXPECT_DOUBLE_EQ(node_only.link(0, 8).bytes_per_second, nvls.link(0, 8).bytes_per_second);
  EXPECT_DOUBLE_EQ(nvls.link(0, 7).bytes_per_second,
                   find_link_preset("h100_nvlink", "").bytes_per_second);

  const RunPlan across = plan(R"({"name": "t", "sizes": [4096], "workers": 16, "transport": "sim",
      "schemes": ["in_network"], "network": {"node": "dgx_h100", "switch": "ib_ndr_sharp"}})");
  const Topology sharp = scenario_topology(across.scenario, *across.runs[0].instance, 16);
  EXPECT_FALSE(sharp.same_node(0, 16));  // a switch of its own, through the NICs
  EXPECT_DOUBLE_EQ(sharp.link(3, 20).bytes_per_second,
                   find_link_preset("ib_ndr_sharp", "").bytes_per_second);

  EXPECT_EQ(error(R"({"name": "t", "sizes": [4096], "workers": 16, "transport": "sim",
      "schemes": ["in_network"], "network": {"node": "dgx_h100"}})"), "/network/switch");
  EXPECT_EQ(error(R"({"name": "t", "sizes": [4096], "workers": 8, "transport": "sim",
      "schemes": ["in_network"], "network": {"node": "dgx_a100"}})"), "/network/switch");
  EXPECT_EQ(error(R"({"name": "t", "sizes": [4096], "workers": 8, "transport": "sim",
      "schemes": ["ring"], "network": {"node": "dgx_h100", "switch": "h100_nvls"}})"),
            "/network/switch");
  const RunPlan all = plan(R"({"name": "t", "sizes": [4096], "workers": 8, "transport": "sim",
      "schemes": "all", "network": {"node": "dgx_a100"}})");
  for (const PlannedRun& r : all.runs) EXPECT_NE(r.scheme, "in_network");
  // A leaf/spine tier is the simulator's; it reaches the topology.
  EXPECT_EQ(error(R"({"name": "t", "sizes": [4096], "workers": 8, "schemes": ["ring"],
      "network": {"inter_node": "ib_hdr_200g", "spine": {"nodes_per_leaf": 2}}})"),
            "/network/spine");
  const RunPlan tiered = plan(R"({"name": "t", "sizes": [4096], "workers": 8, "transport": "sim",
      "schemes": ["ring"], "network": {"inter_node": "ib_hdr_200g",
      "spine": {"nodes_per_leaf": 2, "oversubscription": 3}}})");
  const Topology leaves = scenario_topology(tiered.scenario, *tiered.runs[0].instance, 8);
  EXPECT_EQ(leaves.leaf_of(5), 2);
  EXPECT_TRUE(leaves.crosses_spine(1, 2));
  EXPECT_FALSE(leaves.crosses_spine(2, 3));
  ASSERT_EQ(leaves.leaf_rates().size(), 4u);
  EXPECT_DOUBLE_EQ(leaves.leaf_rates()[0],
                   2 * find_link_preset("ib_hdr_200g", "").bytes_per_second / 3);
  // Unshaped, the switch is only the run's extra endpoints: nothing to rate.
  EXPECT_EQ(plan(R"({"name": "t", "sizes": [4096], "workers": 4, "schemes": ["in_network"]})")
                .runs.size(),
            1u);
}

// Sweeps: the first swept field varies slowest; each point holds one
// value per field and says which; a list of link presets sweeps the link
// and nothing inside it; a point's error is named by the value's index.
// auto holds a copy of the input while it measures: a size whose two
// buffers per worker fit this machine's memory but whose three do not is
// planned for the ring and refused for auto.
TEST(Scenario, AutosCopyCountsInTheMemoryCheck) {
  const double memory = machine_memory_bytes();
  if (memory <= 0) GTEST_SKIP() << "this machine's memory is unknown";
  // 4 workers: 8 buffers for the ring, 12 for auto; 10 of this size fill it.
  const std::size_t size = static_cast<std::size_t>(memory / 10 / 4) * 4;
  const auto plan = [&](const char* scheme) {
    return plan_runs(parse_scenario(nlohmann::json{
        {"name", "m"}, {"workers", 4}, {"schemes", {scheme}}, {"sizes", {size}}}));
  };
  EXPECT_NO_THROW(plan("ring"));
  try {
    plan("auto");
    ADD_FAILURE() << "planned auto with 12 buffers of " << size << " bytes";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("x 12 buffers for auto"), std::string::npos) << e.what();
  }
}

TEST(Sweeps, ExpandIntoEveryCombination) {
  const auto doc = nlohmann::json::parse(R"({"name": "s", "sizes": [4], "workers": [2, 4],
      "segment_bytes": ["64KiB", "1MiB"], "ps": {"servers": [1, 2, 3]},
      "network": {"inter_node": ["ib_hdr_200g", "ib_ndr_400g"]}})");
  const std::vector<SweepPoint> points = expand_sweeps(doc);
  ASSERT_EQ(points.size(), 2u * 3u * 2u);
  EXPECT_EQ(points[0].label,
            "segment_bytes=\"64KiB\" ps.servers=1 network.inter_node=\"ib_hdr_200g\"");
  EXPECT_EQ(points[1].label,
            "segment_bytes=\"64KiB\" ps.servers=1 network.inter_node=\"ib_ndr_400g\"");
  EXPECT_EQ(points.back().label,
            "segment_bytes=\"1MiB\" ps.servers=3 network.inter_node=\"ib_ndr_400g\"");
  for (const SweepPoint& p : points) {
    const Scenario s = parse_scenario(p.document);  // every point is a valid scenario
    EXPECT_EQ(s.workers, (std::vector<int>{2, 4})) << "workers sweep inside each point";
  }
  EXPECT_EQ(parse_scenario(points[3].document).ps_servers, 2);
  EXPECT_EQ(sweep_pointer(points[3], "/ps/servers"), "/ps/servers/1");
  EXPECT_EQ(sweep_pointer(points[3], "/network/inter_node/preset"), "/network/inter_node/1/preset");
  EXPECT_EQ(sweep_pointer(points[3], "/sizes/0"), "/sizes/0");
  const auto one = expand_sweeps(nlohmann::json::parse(R"({"name": "s", "sizes": [4]})"));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].label, "");
  nlohmann::json many = nlohmann::json::parse(R"({"name": "s", "sizes": [4]})");
  many["ps"]["servers"] = std::vector<int>(20, 1);
  many["segment_bytes"] = std::vector<int>(20, 1024);
  EXPECT_THROW(expand_sweeps(many), ConfigError);
}

TEST(Scenario, AMisspeltKeyOrSchemeGetsASuggestion) {
  const auto error_of = [](const char* text) {
    try {
      plan_runs(parse_scenario(nlohmann::json::parse(text)));
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(error_of(R"({"name": "x", "sizes": [4], "shemes": ["ring"]})").find("did you mean 'schemes'?"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"name": "x", "sizes": [4], "ps": {"server": 2}})").find("did you mean 'servers'?"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"name": "x", "sizes": [4], "schemes": ["rnig"]})").find("did you mean 'ring'?"),
            std::string::npos);
  EXPECT_EQ(error_of(R"({"name": "x", "sizes": [4], "colour": "red"})").find("did you mean"),
            std::string::npos);
}

TEST(Scenario, JsonSyntaxErrorsNameLineAndColumn) {
  const auto path = std::filesystem::temp_directory_path() / "gradex_bad_syntax.json";
  {
    std::ofstream out(path);
    out << "{\n  \"name\": \"x\",\n  \"sizes\": [1,]\n}\n";
  }
  try {
    load_scenario(path);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(e.field().find(":3:"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

TEST(Scenario, SimulatedBuffersArePhantomsSoLargeSizesFit) {
  EXPECT_NO_THROW(plan_runs(parse_scenario(nlohmann::json::parse(
      R"({"name": "x", "sizes": ["1TB"], "workers": 1024, "transport": "sim"})"))));
}

TEST(Scenario, DeepNestingIsRefusedBeforeItIsBuilt) {
  const std::string text = R"({"name": "x", "junk": )" + std::string(150'000, '[');
  try {
    parse_json_text(text, "deep.json");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field().rfind("deep.json#/junk/0/0/", 0), 0u) << e.what();
    EXPECT_NE(e.reason().find("nested deeper than 64"), std::string::npos) << e.what();
  }
}

TEST(Scenario, NumberOverflowNamesItsPointer) {
  try {
    parse_json_text(R"({"name": "x", "sizes": [4, 1e309]})", "big.json");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "big.json#/sizes/1") << e.what();
    EXPECT_NE(e.reason().find("'1e309' is out of range"), std::string::npos) << e.what();
  }
}

TEST(Scenario, FilesAreReadUpToACap) {
  try {
    read_json_file("/dev/zero");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(e.reason().find("larger than 16 MiB"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_json_file(std::filesystem::temp_directory_path()), ConfigError);
}

// Field names a refusal should carry for a workload.
std::string refused_train_field(const TrainWorkload& w, int workers,
                                const std::string& transport = "inproc") {
  try {
    check_train_memory(w, workers, transport, workload_pointer());
  } catch (const ConfigError& e) {
    EXPECT_NE(e.reason().find("this machine has"), std::string::npos) << e.what();
    return e.field();
  }
  return "accepted";
}

TEST(Scenario, TrainingBeyondMemoryNamesTheField) {
  TrainWorkload wide;
  wide.layers = "2000000000-2000000000";
  EXPECT_EQ(refused_train_field(wide, 1), "/workload/layers");
  TrainWorkload scaled;
  scaled.model = "resnet50";
  scaled.param_scale = 1000;
  EXPECT_EQ(refused_train_field(scaled, 1), "/workload/param_scale");
  // On the simulator a profiled model holds no buffers: 16,384 ranks fit.
  TrainWorkload full;
  full.model = "resnet50";
  EXPECT_EQ(refused_train_field(full, 64), "/workload/param_scale");
  EXPECT_EQ(refused_train_field(full, 16384, "sim"), "accepted");
  EXPECT_EQ(refused_train_field(wide, 1, "sim"), "/workload/layers");  // the MLP has values
  TrainWorkload big_batch;
  big_batch.batch = 1 << 20;
  EXPECT_EQ(refused_train_field(big_batch, 64), "/workload/batch");
  EXPECT_EQ(refused_train_field(TrainWorkload{}, 64), "accepted");
}

TEST(Scenario, FileErrorsCarryThePath) {
  try {
    load_scenario("/nonexistent/gradex.json");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/gradex.json"), std::string::npos);
  }
}

}  // namespace
}  // namespace gradex
