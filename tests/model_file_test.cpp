// Model files: the committed ResNet-50 file against the published
// architecture and the built-in profile, strict reading (each malformed
// file names the file and the JSON pointer), the script that writes them
// (with Debian's torch, skipped without it), and training under every
// scheme from a file.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "process_fixture.h"
#include "schemes/registry.h"
#include "train/model_file.h"
#include "train/profiled_model.h"
#include "train/profiles.h"
#include "train/reducer.h"
#include "train/trainer.h"

namespace gradex {
namespace {

const std::string kResnet50 = GRADEX_SOURCE_DIR "/models/resnet50.json";

TEST(ModelFile, ResNet50HasTorchvisionsTensorsAndTheProfilesParameters) {
  const ModelProfile m = model_profile(kResnet50);
  EXPECT_EQ(m.name, "resnet50");
  // torchvision's resnet50: 161 parameter tensors (53 convolutions, 53
  // batch norms with weight and bias, the classifier's weight and bias).
  ASSERT_EQ(m.layers.size(), 161u);
  EXPECT_EQ(m.layers.front().name, "conv1.weight");
  EXPECT_EQ(m.layers.back().name, "fc.bias");
  EXPECT_EQ(m.params(), model_profile("resnet50").params());  // 25,557,032
  // About 4.1 G multiply-adds per 224x224 image, 2 FLOPs each: He et al.
  // 2016 (CVPR), table 1, give 3.8 x 10^9 multiply-adds for the
  // convolutions alone; torchvision's model table lists 4.09 "GFLOPS".
  EXPECT_GT(m.forward_flops(), 7.6e9);
  EXPECT_LT(m.forward_flops(), 8.4e9);
}

// gradex fills DDP's buckets as torch does: the committed file's
// "ddp_buckets" is torch's own assignment (scripts/model_from_torch.py
// calls torch's function), at torch's caps of 1 MiB first and 25 MiB after.
TEST(ModelFile, BucketsEqualTorchDdpsOwnAssignment) {
  const nlohmann::json doc = nlohmann::json::parse(std::ifstream(kResnet50));
  const auto torch_buckets = doc.at("ddp_buckets").get<std::vector<std::vector<std::size_t>>>();
  ASSERT_GT(torch_buckets.size(), 2u);
  const ProfiledModel model(model_profile(kResnet50), EmulationConfig{});
  const TrainConfig defaults;
  const std::vector<Bucket> ours =
      make_buckets(model.params(), defaults.bucket_bytes, defaults.first_bucket_bytes);
  ASSERT_EQ(ours.size(), torch_buckets.size());
  for (std::size_t b = 0; b < ours.size(); ++b) EXPECT_EQ(ours[b].params, torch_buckets[b]) << b;
}

class ModelFileErrors : public gradex::testing::ProcessTest {};

TEST_F(ModelFileErrors, NameTheFileAndTheValue) {
  const std::pair<std::string, std::string> cases[] = {
      {R"([1, 2])", "#: expected a JSON object"},
      {R"({"layers": [{"name": "a", "params": 1, "forward_flops": 1}]})", "#/name"},
      {R"({"name": "m"})", "#/layers"},
      {R"({"name": "m", "layers": []})", "#/layers"},
      {R"({"name": "m", "layers": [{"name": "a", "params": 0, "forward_flops": 1}]})",
       "#/layers/0/params"},
      {R"({"name": "m", "layers": [{"name": "a", "forward_flops": 1}]})", "#/layers/0/params"},
      {R"({"name": "m", "layers": [{"name": "a", "params": 2, "forward_flops": -1}]})",
       "#/layers/0/forward_flops"},
      {R"({"name": "m", "layers": [{"name": "a", "params": 2, "flops": 1}]})",
       "#/layers/0/flops"},
      {R"({"name": "m", "layers": [{"name": "a", "params": 2, "forward_flops": 0}]})",
       "no tensor has forward_flops"},
      {R"({"name": "m", "layers": [{"name": "a", "params": 2, "forward_flops": 1}], "x": 1})",
       "#/x"},
      {R"({"name": "m", "ddp_buckets": [[0], [0]], "layers": [{"name": "a", "params": 2, "forward_flops": 1}]})",
       "#/ddp_buckets/1/0"},
      {R"({"name": "m", "ddp_buckets": [], "layers": [{"name": "a", "params": 2, "forward_flops": 1}]})",
       "1 tensors in no bucket"},
  };
  for (const auto& [text, want] : cases) {
    const std::string path = write("m.json", text).string();
    try {
      model_profile(path);
      ADD_FAILURE() << "accepted " << text;
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(path), std::string::npos) << what;
      EXPECT_NE(what.find(want), std::string::npos) << text << " -> " << what;
    }
  }
  EXPECT_THROW(model_profile((dir_ / "missing.json").string()), ConfigError);
}

// The script regenerates the committed file from Debian's torchvision.
TEST_F(ModelFileErrors, TheScriptWritesTheCommittedResNet50) {
  if (std::system("/usr/bin/python3 -c 'import torch, torchvision' > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "python3-torch and python3-torchvision are not installed";
  }
  ASSERT_EQ(shell("/usr/bin/python3 " GRADEX_SOURCE_DIR "/scripts/model_from_torch.py resnet50 -o " +
                  (dir_ / "r.json").string()),
            0)
      << err();
  const auto made = nlohmann::json::parse(slurp(dir_ / "r.json"));
  const auto committed = nlohmann::json::parse(slurp(kResnet50));
  EXPECT_EQ(made["layers"], committed["layers"]);
  EXPECT_EQ(shell("/usr/bin/python3 " GRADEX_SOURCE_DIR "/scripts/model_from_torch.py nosuch -o " +
                  (dir_ / "n.json").string()),
            2);
  EXPECT_NE(err().find("no model 'nosuch'"), std::string::npos) << err();
}

// `gradex train --profile FILE` under every scheme; the counted bytes on
// the wire match each scheme's declaration for the file's tensors.
TEST_F(ModelFileErrors, TrainsUnderEveryScheme) {
  std::string schemes;
  for (const std::string& name : portable_scheme_names()) schemes += " -s " + name;
  const auto o = gradex("train --profile " + kResnet50 +
                        " --fwd-ms 1 --bwd-ratio 2 -b 4 --max-steps 2 -w 2 --param-scale 0.001" +
                        schemes);
  ASSERT_EQ(o.code, 0) << o.output();
  for (const std::string& name : portable_scheme_names()) {
    EXPECT_NE(o.out.find("\n  " + name + " "), std::string::npos) << name << "\n" << o.out;
  }
  const auto bad = gradex("train --profile " + (dir_ / "none.json").string() + " -w 2");
  EXPECT_EQ(bad.code, 2) << bad.output();
}

}  // namespace
}  // namespace gradex
