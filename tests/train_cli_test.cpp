// `gradex train` end to end on data the test writes (tiny IDX files), and
// on an emulated workload: exit codes, clear errors, result and trace files.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "process_fixture.h"

namespace {

namespace fs = std::filesystem;

using gradex::testing::Outcome;

class TrainCli : public gradex::testing::ProcessTest {
 protected:
  Outcome run(const std::string& args) { return gradex(args); }
};

TEST_F(TrainCli, TrainsOnTinyDataAndWritesResults) {
  write_tiny_fashion_mnist();
  const Outcome o = run("train --data-dir " + dir_.string() +
                        " -s ring -s ps -w 2 -b 10 -e 2 --layers 16 --zero -o " +
                        (dir_ / "out").string());
  ASSERT_EQ(o.code, 0) << o.output();
  EXPECT_NE(o.output().find("ring epoch 2"), std::string::npos) << o.output();
  std::ifstream in(dir_ / "out" / "results.json");
  const auto j = nlohmann::json::parse(in);
  ASSERT_EQ(j["runs"].size(), 3u);  // ring, ps, zero
  for (const auto& r : j["runs"]) {
    EXPECT_EQ(r["epochs"].size(), 2u);
    EXPECT_TRUE(r["replicas_agree"].get<bool>());
  }
  EXPECT_TRUE(fs::exists(dir_ / "out" / "results.csv"));
}

TEST_F(TrainCli, ConsistencyModelsRun) {
  write_tiny_fashion_mnist();
  const Outcome o = run("train --data-dir " + dir_.string() +
                        " -w 3 -b 10 -e 1 --layers 8 --consistency bsp asp ssp --staleness 1");
  ASSERT_EQ(o.code, 0) << o.output();
  EXPECT_NE(o.output().find("ssp(s=1)"), std::string::npos) << o.output();
  EXPECT_NE(o.output().find("mean-staleness"), std::string::npos) << o.output();
}

TEST_F(TrainCli, CorruptDataFailsWithTheFileNamed) {
  write_tiny_fashion_mnist();
  fs::resize_file(dir_ / "train-images-idx3-ubyte", 1000);
  const Outcome o = run("train --data-dir " + dir_.string());
  EXPECT_EQ(o.code, 1) << o.output();
  EXPECT_NE(o.output().find("train-images-idx3-ubyte: payload is"), std::string::npos) << o.output();
}

TEST_F(TrainCli, BadFlagsAreBadInput) {
  write_tiny_fashion_mnist();
  EXPECT_EQ(run("train --data-dir " + dir_.string() + " --optimizer lion").code, 2);
  EXPECT_EQ(run("train --data-dir " + dir_.string() + " --layers 12-x").code, 2);
  EXPECT_EQ(run("train --data-dir " + dir_.string() + " -s nosuch").code, 2);
  EXPECT_EQ(run("train --profile alexnet").code, 2);
}

TEST_F(TrainCli, ProfiledWorkloadWritesATimelineWithBucketSpans) {
  const fs::path trace = dir_ / "trace.json";
  const Outcome o = run("train --profile resnet50 --fwd-ms 2 --param-scale 0.001 -w 2 "
                        "--bucket-mb 0.02 --max-steps 3 --trace " + trace.string() +
                        " --trace-steps 2");
  ASSERT_EQ(o.code, 0) << o.output();
  EXPECT_NE(o.output().find("ring no-overlap"), std::string::npos) << o.output();
  EXPECT_NE(o.output().find("ring overlap"), std::string::npos) << o.output();
  std::ifstream in(trace);
  const auto j = nlohmann::json::parse(in);
  int buckets = 0, compute = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    (e["tid"] == 1 ? buckets : compute)++;
  }
  EXPECT_GT(buckets, 2 * 2 * 2);  // >2 buckets, 2 steps, 2 ranks
  EXPECT_EQ(compute, 2 * 3 * 2);  // forward, backward, optimizer; 2 steps, 2 ranks
}

}  // namespace
