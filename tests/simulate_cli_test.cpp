// "transport": "sim", link presets in scenarios, and `gradex simulate` end
// to end: model beside simulation in the table and the CSV, errors that
// name the field.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>

#include "common/errors.h"
#include "config/scenario.h"

namespace gradex {
namespace {

namespace fs = std::filesystem;

Scenario parse(const std::string& text) { return parse_scenario(nlohmann::json::parse(text)); }

// An empty scratch folder of this process's own under the temporary one.
fs::path fresh_dir(const std::string& prefix) {
  const fs::path dir = fs::temp_directory_path() / (prefix + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(SimScenario, AcceptsSimTransportAndHardwarePresets) {
  const Scenario s = parse(R"({"name": "x", "sizes": [1024], "transport": "sim",
      "network": {"intra_node": "h100_nvlink",
                  "inter_node": {"preset": "ib_hdr_200g", "latency": "2us"}}})");
  EXPECT_EQ(s.transport, "sim");
  EXPECT_DOUBLE_EQ(s.network.intra_node.bytes_per_second, 450e9);
  EXPECT_DOUBLE_EQ(s.network.inter_node.bytes_per_second, 25e9);
  EXPECT_DOUBLE_EQ(s.network.inter_node.latency_seconds, 2e-6);
}

// A preset brings its protocols; "protocols": false keeps the datasheet's
// rate alone, as a back-of-the-envelope analysis takes it.
TEST(SimScenario, PresetsCarryProtocolsUnlessDropped) {
  const Scenario s = parse(R"({"name": "x", "sizes": [1024], "transport": "sim",
      "network": {"intra_node": "a100_nvlink",
                  "inter_node": {"preset": "ib_hdr_200g", "protocols": false}}})");
  ASSERT_EQ(s.network.intra_node.protocols.size(), 2u);
  // Small messages take LL (cheap to start), large ones Simple (faster).
  EXPECT_STREQ(s.network.intra_node.protocol_for(8)->name, "LL");
  EXPECT_STREQ(s.network.intra_node.protocol_for(1 << 20)->name, "Simple");
  EXPECT_GT(s.network.intra_node.wire_bytes(1 << 20), 1 << 20);
  EXPECT_TRUE(s.network.inter_node.protocols.empty());
  EXPECT_DOUBLE_EQ(s.network.inter_node.wire_bytes(1000), 1000);
  EXPECT_DOUBLE_EQ(s.network.inter_node.delay(1000), 0);
}

TEST(SimScenario, UnknownPresetNamesTheField) {
  try {
    parse(R"({"name": "x", "sizes": [4], "network": {"inter_node": "ib_xdr_9000g"}})");
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "/network/inter_node");
    EXPECT_NE(std::string(e.what()).find("ib_hdr_200g"), std::string::npos) << e.what();
  }
}

TEST(SimScenario, PresetAndBandwidthTogetherIsAnError) {
  EXPECT_THROW(parse(R"({"name": "x", "sizes": [4], "network": {"inter_node":
                   {"preset": "pcie4", "bandwidth": "1GB/s"}}})"),
               ConfigError);
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(SimulateCommand, PrintsModelBesideSimulationAndWritesCsv) {
  const fs::path dir = fresh_dir("gradex_simulate_");
  std::ofstream(dir / "s.json") << R"({"name": "tiny", "workers": [4, 8], "schemes": ["ring", "ps"],
      "sizes": ["1MiB"], "transport": "inproc", "network": {"inter_node": "ib_hdr_200g"}})";
  const std::string cmd = std::string(GRADEX_BINARY) + " simulate " + (dir / "s.json").string() +
                          " --servers 1,2 -o " + (dir / "out").string() + " > " +
                          (dir / "stdout").string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  const std::string out = slurp(dir / "stdout");
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  EXPECT_NE(out.find("simulated"), std::string::npos) << out;
  EXPECT_NE(out.find("servers 2"), std::string::npos) << out;
  const std::string csv = slurp(dir / "out" / "results.csv");
  EXPECT_NE(csv.find("model_time_s,source,chose,sweep,collective\n"), std::string::npos) << csv;
  // Phantom buffers: nothing was checked, so `wrong` is left empty.
  EXPECT_NE(csv.find(",,"), std::string::npos) << csv;
  EXPECT_EQ(csv.find(",measured,"), std::string::npos) << csv;
  // --servers 1,2 is a sweep of ps.servers: each row says its point.
  EXPECT_NE(csv.find(",simulated,,ps.servers=1,all_reduce\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",simulated,,ps.servers=2,all_reduce\n"), std::string::npos) << csv;
  // 2 server counts x 2 worker counts x 2 schemes, plus the header.
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 9) << csv;
  fs::remove_all(dir);
}

// Runs `gradex simulate ARGS`, returning the exit code and the output.
std::pair<int, std::string> simulate(const fs::path& dir, const std::string& args) {
  const std::string cmd = std::string(GRADEX_BINARY) + " simulate " + args + " > " +
                          (dir / "stdout").string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir / "stdout")};
}

// A training scenario simulates as well: its steps on virtual time, its
// flags checked like any run's.
TEST(SimulateCommand, TrainsATrainingScenarioAndQuietDropsTheLinePerSize) {
  const fs::path dir = fresh_dir("gradex_simulate_train_");
  std::ofstream(dir / "t.json") << R"({"name": "t", "workers": 2, "schemes": ["ring", "ps"],
      "network": {"inter_node": "ib_hdr_200g"},
      "workload": {"kind": "train", "model": "resnet50", "fwd_ms": 1, "param_scale": 0.001,
                   "max_steps": 2}})";
  const std::string train = (dir / "t.json").string();
  auto [code, out] = simulate(dir, train + " -o " + (dir / "out").string());
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("# transport sim"), std::string::npos) << out;
  EXPECT_TRUE(fs::exists(dir / "out" / "results.json"));
  std::tie(code, out) = simulate(dir, train + " -q");
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("-q: applies to all-reduce workloads"), std::string::npos) << out;
  std::tie(code, out) = simulate(dir, train + " --servers 1,2");
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("--servers: sweeps apply to all-reduce workloads"), std::string::npos) << out;
  // -q on an all-reduce scenario: the preamble and no line per size.
  std::ofstream(dir / "a.json") << R"({"name": "a", "workers": 4, "schemes": ["ring"],
      "sizes": ["1MiB"], "network": {"inter_node": "ib_hdr_200g"}})";
  std::tie(code, out) = simulate(dir, (dir / "a.json").string() + " -q --no-output");
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("# simulated"), std::string::npos) << out;
  EXPECT_EQ(out.find("1048576"), std::string::npos) << out;
  fs::remove_all(dir);
}

// --symmetric-subset: the table says which rows a subset stood for, and a
// command whose ranks are real refuses the flag by name.
TEST(SimulateCommand, SymmetricSubsetIsSaidAndRefusedOffTheSimulator) {
  const fs::path dir = fresh_dir("gradex_subset_");
  auto [code, out] = simulate(dir, "-n 64 -s ring -b 1MiB --link ib_hdr_200g --no-output "
                                   "--symmetric-subset 8");
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("(symmetric subset: 8 of 64 ranks simulated)"), std::string::npos) << out;
  std::tie(code, out) = simulate(dir, "-n 64 -s ring,tree -b 1MiB --no-output --symmetric-subset 8");
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("--symmetric-subset: 'tree' does not run one schedule"), std::string::npos) << out;
  // A segment size of its own is a scheme's to take only if it pipelines.
  std::tie(code, out) = simulate(dir, "-n 4 -s tree@16KiB,ps@64KiB -b 1MiB --no-output");
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("--schemes: 'ps@64KiB': ps does not pipeline in segments"), std::string::npos) << out;
  const std::string cmd = std::string(GRADEX_BINARY) + " run -n 4 -s ring -b 1KiB --no-output "
                          "--symmetric-subset 2 > " + (dir / "stdout").string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  out = slurp(dir / "stdout");
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << out;
  EXPECT_NE(out.find("--symmetric-subset: applies to the simulator only"), std::string::npos) << out;
  fs::remove_all(dir);
}

// The switches that sum are flags too: in-network reduction across nodes
// runs from flags alone, a switch no scheme of the run uses is refused by
// its flag, and a missing one is asked for by its flag.
TEST(SimulateCommand, SwitchesThatSumAreFlags) {
  const fs::path dir = fresh_dir("gradex_switch_");
  auto [code, out] = simulate(dir, "-n 16 -s in_network -b 1MiB --link ib_hdr_200g "
                                   "--switch ib_ndr_sharp --no-output");
  EXPECT_EQ(code, 0) << out;
  std::tie(code, out) = simulate(dir, "-n 16 -s in_network_hierarchical -b 1MiB --ranks-per-node 8 "
                                      "--intra-link h100_nvlink --link ib_ndr_400g "
                                      "--node-switch h100_nvls --switch 48GB/s --no-output");
  EXPECT_EQ(code, 0) << out;
  std::tie(code, out) = simulate(dir, "-n 4 -s ring -b 1MiB --link ib_hdr_200g --switch ib_ndr_sharp --no-output");
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("--switch: applies to in_network and in_network_hierarchical"),
            std::string::npos)
      << out;
  std::tie(code, out) = simulate(dir, "-n 16 -s in_network -b 1MiB --link ib_hdr_200g --no-output");
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("give network.switch (--switch;"), std::string::npos) << out;
  fs::remove_all(dir);
}

// Fields that do not apply are refused by the flag or the field that gave
// them: iteration counts on the simulator (it runs each size once),
// servers where no scheme counts them, a segment size where no scheme
// pipelines. A real run's own counts are
// dropped when simulate moves it onto the simulator.
TEST(SimulateCommand, FieldsThatDoNotApplyAreRefused) {
  const fs::path dir = fresh_dir("gradex_apply_");
  auto [code, out] = simulate(dir, "-n 4 -s ring -b 1KiB --iters 5 --no-output");
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("--iters: does not apply: the simulator runs each size once"), std::string::npos) << out;
  std::tie(code, out) = simulate(dir, "-n 4 -s ring -b 1KiB --warmup 2 --no-output");
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("--warmup: does not apply"), std::string::npos) << out;
  std::tie(code, out) = simulate(dir, "-n 4 -s ring -b 1KiB --iters 1 --warmup 0 --no-output");
  EXPECT_EQ(code, 0) << out;
  std::tie(code, out) = simulate(dir, "-n 4 -s ring,tree -b 1KiB --servers 2 --no-output");
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("--servers: applies to the schemes whose servers it counts (ps, ps_pipelined"),
            std::string::npos) << out;
  std::tie(code, out) = simulate(dir, "-n 4 -s ring,ps_colocated -b 1KiB --servers 2 --no-output");
  EXPECT_EQ(code, 0) << out;
  // A segment size where nothing pipelines in segments; auto's candidates do.
  std::tie(code, out) = simulate(dir, "-n 4 -s ps,halving_doubling -b 1KiB --segment 64KiB --no-output");
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("--segment: applies to the schemes that pipeline in segments (ring, rail_rings, "
                     "tree"),
            std::string::npos)
      << out;
  for (const char* fine : {"ps_pipelined", "ps,tree", "auto"}) {
    std::tie(code, out) = simulate(dir, std::string("-n 4 -s ") + fine + " -b 1KiB --segment 64KiB --no-output");
    EXPECT_EQ(code, 0) << fine << ": " << out;
  }
  // In a file: the simulator's own scenario refuses them by their field.
  std::ofstream(dir / "sim.json") << R"({"name": "s", "transport": "sim", "sizes": [64],
      "workers": [2], "schemes": ["ring"], "iters": 3})";
  std::ofstream(dir / "real.json") << R"({"name": "r", "transport": "tcp", "sizes": [64],
      "workers": [2], "schemes": ["ring"], "iters": 3, "warmup_iters": 4})";
  std::ofstream(dir / "servers.json") << R"({"name": "v", "transport": "sim", "sizes": [64],
      "workers": [2], "schemes": ["tree"], "ps": {"servers": 1}})";
  std::ofstream(dir / "inter.json") << R"({"name": "i", "transport": "sim", "sizes": [64],
      "workers": [4], "schemes": ["ring", "ps"], "hierarchical": {"inter": "tree"}})";
  std::ofstream(dir / "inter_read.json") << R"({"name": "j", "transport": "sim", "sizes": [64],
      "workers": [4], "ranks_per_node": 2, "schemes": ["ring", "hierarchical"],
      "hierarchical": {"inter": "tree"}})";
  std::tie(code, out) = simulate(dir, (dir / "sim.json").string() + " --no-output");
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("sim.json#/iters: does not apply"), std::string::npos) << out;
  std::tie(code, out) = simulate(dir, (dir / "servers.json").string() + " --no-output");
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("servers.json#/ps/servers: applies to"), std::string::npos) << out;
  std::tie(code, out) = simulate(dir, (dir / "inter.json").string() + " --no-output");
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("inter.json#/hierarchical/inter: applies to the schemes whose algorithm "
                     "across nodes it sets (hierarchical, auto)"),
            std::string::npos)
      << out;
  std::tie(code, out) = simulate(dir, (dir / "inter_read.json").string() + " --no-output");
  EXPECT_EQ(code, 0) << out;
  std::tie(code, out) = simulate(dir, (dir / "real.json").string() + " -q -o " + (dir / "out").string());
  EXPECT_EQ(code, 0) << out;
  const std::string embedded = slurp(dir / "out" / "results.json");
  EXPECT_EQ(embedded.find("\"iters\""), std::string::npos) << embedded;
  EXPECT_EQ(embedded.find("\"warmup_iters\""), std::string::npos) << embedded;
  fs::remove_all(dir);
}

TEST(SimulateCommand, BadServersFlagIsBadInput) {
  const std::string cmd = std::string(GRADEX_BINARY) + " simulate " + GRADEX_SOURCE_DIR +
                          "/scenarios/quickstart.json --servers 0 > /dev/null 2>&1";
  const int status = std::system(cmd.c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2);
}

}  // namespace
}  // namespace gradex
