// The GPU part's device-free paths, which run on every machine: the
// registry's NCCL baselines, the scenario fields that ask for a GPU, and
// the clear exit-2 error where there is none (or no CUDA build). On a
// machine with a GPU the refusals do not apply and those cases skip.
#include <gtest/gtest.h>

#include <string>

#include "common/errors.h"
#include "config/scenario.h"
#include "gpu/cuda.h"
#include "process_fixture.h"
#include "runner/plan.h"
#include "schemes/registry.h"

namespace gradex {
namespace {

using testing::Outcome;

bool have_gpu() { return cuda_device_count() > 0; }

Scenario parse(const std::string& text) { return parse_scenario(nlohmann::json::parse(text)); }

TEST(GpuRegistry, ListsTheNcclBaselinesWhereBuiltAndSaysWhyTheyCannotRun) {
  int listed = 0;
  for (const SchemeEntry& e : scheme_registry()) {
    if (e.name != "nccl_allreduce" && e.name != "nccl_reduce_bcast") continue;
    ++listed;
    EXPECT_TRUE(e.baseline);
    EXPECT_EQ(e.needs_transport, "nccl");
    ASSERT_TRUE(e.enabled);
    EXPECT_EQ(e.enabled(), have_gpu());
    if (!have_gpu()) {
      EXPECT_NE(e.why_unavailable().find("no CUDA device"), std::string::npos);
    }
  }
  EXPECT_EQ(listed, cuda_built() ? 2 : 0);
  for (const std::string& name : portable_scheme_names()) EXPECT_EQ(name.rfind("nccl_", 0), std::string::npos);
}

TEST(GpuScenario, NcclTransportDefaultsToDeviceBuffers) {
  const Scenario s = parse(R"({"name": "g", "workers": [2], "transport": "nccl", "sizes": [64]})");
  EXPECT_EQ(s.transport, "nccl");
  EXPECT_EQ(s.device, "cuda");
  EXPECT_FALSE(s.device_given);
  const Scenario c = parse(R"({"name": "g", "workers": [2], "sizes": [64]})");
  EXPECT_EQ(c.device, "cpu");
  const Scenario d = parse(R"({"name": "g", "workers": [2], "device": "cuda", "sizes": [64]})");
  EXPECT_EQ(d.device, "cuda");
  EXPECT_TRUE(d.device_given);
}

TEST(GpuScenario, RefusesWhatDoesNotApply) {
  auto field_of = [](const std::string& text) {
    try {
      plan_runs(parse(text));
    } catch (const ConfigError& e) {
      return e.field();
    }
    return std::string("(accepted)");
  };
  EXPECT_THROW(parse(R"({"name": "g", "workers": [2], "device": "gpu", "sizes": [64]})"), ConfigError);
  EXPECT_EQ(field_of(R"({"name": "g", "workers": [2], "device": "cuda", "sizes": [64]})"), "/device");
  EXPECT_EQ(field_of(R"({"name": "g", "workers": [2], "transport": "nccl", "device": "cpu",
                         "sizes": [64]})"),
            "/device");
  EXPECT_EQ(field_of(R"({"name": "g", "workers": [2], "transport": "nccl", "sizes": [64],
                         "network": {"inter_node": "ib_hdr_200g"}})"),
            "/network");
  EXPECT_EQ(field_of(R"({"name": "g", "workers": [2], "schemes": ["nccl_allreduce"],
                         "sizes": [64]})"),
            "/schemes/0");
}

TEST(GpuScenario, WithoutAGpuTheRunIsRefusedNamingTheField) {
  if (have_gpu()) GTEST_SKIP() << "this machine has a CUDA device: nothing to refuse";
  try {
    plan_runs(parse(R"({"name": "g", "workers": [2], "transport": "nccl", "device": "cuda",
                        "sizes": [64]})"));
    FAIL() << "planned without a GPU";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "/device");
    EXPECT_NE(e.reason().find("needs a GPU"), std::string::npos) << e.reason();
  }
}

class GpuCli : public testing::ProcessTest {};

TEST_F(GpuCli, DeviceCudaWithoutAGpuIsExitTwoWithOneClearLine) {
  if (have_gpu()) GTEST_SKIP() << "this machine has a CUDA device: the run would go ahead";
  const auto file = write("g.json", R"({"name": "g", "workers": [2], "transport": "nccl",
                                        "sizes": [4096], "schemes": ["ring"]})");
  const Outcome o = gradex("run --device cuda " + file.string());
  EXPECT_EQ(o.code, 2) << o.output();
  EXPECT_NE(o.err.find("#/device: \"device\": \"cuda\" needs a GPU"), std::string::npos) << o.err;
  const Outcome t = gradex("run " + file.string());
  EXPECT_EQ(t.code, 2) << t.output();
  EXPECT_NE(t.err.find("#/transport: \"transport\": \"nccl\" needs a GPU"), std::string::npos) << t.err;
}

TEST_F(GpuCli, VersionAndListSayWhetherCudaAndNcclAreBuiltIn) {
  const Outcome v = gradex("--version");
  EXPECT_EQ(v.code, 0);
  EXPECT_NE(v.out.find(cuda_built() ? "NCCL" : "CUDA and NCCL not built in"), std::string::npos) << v.out;
  if (cuda_built() && !have_gpu()) {
    EXPECT_NE(v.out.find("no CUDA device"), std::string::npos) << v.out;
  }
  const Outcome l = gradex("list");
  EXPECT_NE(l.out.find("gpu: "), std::string::npos) << l.out;
}

}  // namespace
}  // namespace gradex
