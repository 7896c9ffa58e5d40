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

namespace {

namespace fs = std::filesystem;

struct Outcome {
  int code;
  std::string output;  // stdout and stderr
};

class TrainCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gradex_train_cli_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Outcome run(const std::string& args) {
    const std::string cmd = std::string(GRADEX_BINARY) + " " + args + " 2>&1";
    FILE* pipe = ::popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    while (std::size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
    const int status = ::pclose(pipe);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
  }

  // An IDX file of unsigned bytes: dims, then a deterministic pattern.
  void write_idx(const std::string& name, std::vector<std::uint32_t> dims, std::uint8_t mod) {
    std::ofstream f(dir_ / name, std::ios::binary);
    const char magic[4] = {0, 0, 8, static_cast<char>(dims.size())};
    f.write(magic, 4);
    std::size_t total = 1;
    for (std::uint32_t d : dims) {
      const char be[4] = {static_cast<char>(d >> 24), static_cast<char>(d >> 16),
                          static_cast<char>(d >> 8), static_cast<char>(d)};
      f.write(be, 4);
      total *= d;
    }
    for (std::size_t i = 0; i < total; ++i) f.put(static_cast<char>((i * 7) % mod));
  }
  void write_tiny_fashion_mnist() {
    write_idx("train-images-idx3-ubyte", {120, 28, 28}, 251);
    write_idx("train-labels-idx1-ubyte", {120}, 10);
    write_idx("t10k-images-idx3-ubyte", {40, 28, 28}, 251);
    write_idx("t10k-labels-idx1-ubyte", {40}, 10);
  }

  fs::path dir_;
};

TEST_F(TrainCli, TrainsOnTinyDataAndWritesResults) {
  write_tiny_fashion_mnist();
  const Outcome o = run("train --data-dir " + dir_.string() +
                        " -s ring -s ps -w 2 -b 10 -e 2 --layers 16 --zero -o " +
                        (dir_ / "out").string());
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("ring epoch 2"), std::string::npos) << o.output;
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
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("ssp(s=1)"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("mean-staleness"), std::string::npos) << o.output;
}

TEST_F(TrainCli, CorruptDataFailsWithTheFileNamed) {
  write_tiny_fashion_mnist();
  fs::resize_file(dir_ / "train-images-idx3-ubyte", 1000);
  const Outcome o = run("train --data-dir " + dir_.string());
  EXPECT_EQ(o.code, 1) << o.output;
  EXPECT_NE(o.output.find("train-images-idx3-ubyte: payload is"), std::string::npos) << o.output;
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
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("ring no-overlap"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("ring overlap"), std::string::npos) << o.output;
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
