// Scenario parsing: every shipped scenario is valid, and malformed ones fail
// with an error that names the JSON pointer of the offending value.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/errors.h"
#include "common/scenario.h"
#include "runner/plan.h"

namespace gradex {
namespace {

TEST(Scenario, EveryShippedScenarioParsesAndPlans) {
  int seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(GRADEX_SOURCE_DIR "/scenarios")) {
    if (entry.path().extension() != ".json") continue;
    SCOPED_TRACE(entry.path().string());
    EXPECT_NO_THROW({
      RunPlan plan = plan_runs(load_scenario(entry.path()));
      EXPECT_FALSE(plan.runs.empty());
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
                               R"({"name": "t", "sizes": [1], "slice_bytes": "2MiB"})")),
                           4)
                .slice_bytes,
            std::size_t{2} << 20);
  EXPECT_EQ(parse_scenario(nlohmann::json::parse(R"({"name": "t", "sizes": [1], "spin_us": 0})"))
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
        Malformed{"no_name", R"({"sizes": [1]})", "/name"},
        Malformed{"unknown_key", R"({"name": "x", "sizes": [1], "wokers": 4})", "/wokers"},
        Malformed{"workers_zero", R"({"name": "x", "sizes": [1], "workers": 0})", "/workers"},
        Malformed{"workers_type", R"({"name": "x", "sizes": [1], "workers": "four"})", "/workers"},
        Malformed{"workers_elem", R"({"name": "x", "sizes": [1], "workers": [2, -1]})", "/workers/1"},
        Malformed{"no_sizes", R"({"name": "x"})", "/sizes"},
        Malformed{"size_unit", R"({"name": "x", "sizes": [1, "3 parsecs"]})", "/sizes/1"},
        Malformed{"sweep_order", R"({"name": "x", "sizes": {"from": "1MiB", "to": "1KiB"}})", "/sizes/to"},
        Malformed{"sweep_key", R"({"name": "x", "sizes": {"from": 1, "to": 2, "step": 2}})", "/sizes/step"},
        Malformed{"dtype", R"({"name": "x", "sizes": [1], "dtype": "f8"})", "/dtype"},
        Malformed{"op", R"({"name": "x", "sizes": [1], "op": "prod"})", "/op"},
        Malformed{"iters", R"({"name": "x", "sizes": [1], "iters": 0})", "/iters"},
        Malformed{"transport", R"({"name": "x", "sizes": [1], "transport": "carrier-pigeon"})", "/transport"},
        Malformed{"scheme_name", R"({"name": "x", "sizes": [1], "schemes": ["ring", "rnig"]})", "/schemes/1"},
        Malformed{"schemes_type", R"({"name": "x", "sizes": [1], "schemes": 3})", "/schemes"},
        Malformed{"ps_key", R"({"name": "x", "sizes": [1], "ps": {"server": 2}})", "/ps/server"},
        Malformed{"ps_placement", R"({"name": "x", "sizes": [1], "ps": {"placement": "moon"}})", "/ps/placement"},
        Malformed{"net_empty", R"({"name": "x", "sizes": [1], "network": {}})", "/network"},
        Malformed{"net_bw", R"({"name": "x", "sizes": [1], "network": {"inter_node": {"bandwidth": "fast"}}})", "/network/inter_node/bandwidth"},
        Malformed{"net_missing_bw", R"({"name": "x", "sizes": [1], "network": {"inter_node": {"latency": "1us"}}})", "/network/inter_node/bandwidth"},
        Malformed{"net_latency", R"({"name": "x", "sizes": [1], "network": {"inter_node": {"bandwidth": 1e9, "latency": -1}}})", "/network/inter_node/latency"},
        Malformed{"net_key", R"({"name": "x", "sizes": [1], "network": {"inter_node": {"bandwidth": 1e9, "jitter": 1}}})", "/network/inter_node/jitter"},
        Malformed{"spin", R"({"name": "x", "sizes": [1], "spin_us": -5})", "/spin_us"},
        Malformed{"slice", R"({"name": "x", "sizes": [1], "slice_bytes": "lots"})", "/slice_bytes"},
        Malformed{"segment", R"({"name": "x", "sizes": [1], "segment_bytes": 0})", "/segment_bytes"},
        Malformed{"timeout", R"({"name": "x", "sizes": [1], "timeout_ms": 0})", "/timeout_ms"},
        Malformed{"too_many_real", R"({"name": "x", "sizes": [1], "workers": [4, 2048]})", "/workers/1"},
        Malformed{"hier_inter", R"({"name": "x", "sizes": [1], "hierarchical": {"inter": "ps"}})", "/hierarchical/inter"}),
    [](const auto& info) { return std::string(info.param.label); });

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
