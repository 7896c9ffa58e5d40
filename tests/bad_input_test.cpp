// Hostile input to the gradex binary: every case ends with exit 2 and one
// line naming the file and field (or, for a run that cannot finish within
// its timeout, exit 1 by the deadline), and nothing is written.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "process_fixture.h"

namespace {

namespace fs = std::filesystem;

using gradex::testing::Outcome;

class BadInput : public gradex::testing::ProcessTest {
 protected:
  // Runs `gradex validate` and `gradex run` on `json` and expects both to
  // refuse it the same way: exit 2, one line naming `field`, no output.
  void expect_refused(const std::string& json, const std::string& field) {
    const fs::path out = dir_ / "out";
    const fs::path sc = write("s.json", json);
    for (const char* verb : {"validate", "run"}) {
      const std::string flags = std::string(verb) == "run" ? " -o " + out.string() : "";
      const Outcome o = gradex(std::string(verb) + " " + sc.string() + flags);
      EXPECT_EQ(o.code, 2) << verb << ": " << o.output();
      EXPECT_NE(o.err.find(sc.string() + "#" + field), std::string::npos) << verb << ": " << o.err;
      EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
      EXPECT_FALSE(fs::exists(out));
    }
  }
};

TEST_F(BadInput, AnEndlessFileIsRefusedAtItsCap) {
  const Outcome o = gradex("validate /dev/zero");
  EXPECT_EQ(o.code, 2) << o.output();
  EXPECT_NE(o.err.find("/dev/zero: larger than 16 MiB"), std::string::npos) << o.err;
}

TEST_F(BadInput, DeepNestingIsRefusedWithoutACrash) {
  expect_refused(R"({"name": "x", "junk": )" + std::string(150'000, '['), "/junk/0/0");
}

TEST_F(BadInput, ANumberBeyondDoubleNamesItsPointer) {
  expect_refused(R"({"name": "x", "sizes": [1e309]})", "/sizes/0");
}

TEST_F(BadInput, SizesMustHoldWholeElements) {
  expect_refused(R"({"name": "x", "workers": 2, "sizes": [1023]})", "/sizes/0");
  expect_refused(R"({"name": "x", "workers": 2, "sizes": [4], "dtype": "f64"})", "/sizes/0");
}

TEST_F(BadInput, BuffersBeyondMemoryAreRefusedBeforeRunning) {
  expect_refused(R"({"name": "x", "workers": 2, "sizes": ["1TB"]})", "/sizes/0");
  expect_refused(R"({"name": "x", "workers": 2, "workload": {"kind": "train", "layers": "2000000000-2000000000"}})",
                 "/workload/layers");
}

// Found by the loop only once it ran, and named "batch" alone; now refused
// by validate and run alike, before anything runs.
TEST_F(BadInput, ABatchLargerThanTheShardNamesItsPointer) {
  expect_refused(R"({"name": "x", "workers": 2, "workload": {"kind": "train", "batch": 1048576}})",
                 "/workload/batch");
}

TEST_F(BadInput, LinksOutsideThePhysicalRangeAreRefused) {
  expect_refused(R"({"name": "x", "workers": 2, "sizes": [4096], "network": {"inter_node": {"bandwidth": "100B/s"}}})",
                 "/network/inter_node/bandwidth");
  expect_refused(R"({"name": "x", "workers": 2, "sizes": [4096], "network": {"inter_node": {"bandwidth": "1GB/s", "latency": "1e300s"}}})",
                 "/network/inter_node/latency");
}

TEST_F(BadInput, TrainFlagsOutsideThePhysicalRangeAreRefused) {
  const Outcome o = gradex("train --link-gbps 1e-300 --workers 2");
  EXPECT_EQ(o.code, 2) << o.output();
  EXPECT_NE(o.err.find("--link-gbps"), std::string::npos) << o.err;
}

// A flag given a value out of its field's range is refused naming the flag,
// whatever the value: before, a negative value of a flag whose "not given"
// was -1 (or 0) ran as if the flag had not been given.
TEST_F(BadInput, EveryFieldFlagOutOfRangeIsRefusedNamingTheFlag) {
  for (const std::string flag : {"--iters -3", "--warmup -2", "-f -2", "-f 0", "--ranks-per-node 0",
                                 "--ranks-per-node -1", "--straggler-ms -5",
                                 "--symmetric-subset -1"}) {
    for (const char* verb : {"run", "simulate"}) {
      const Outcome o = gradex(std::string(verb) + " -s ring -n 4 -b 1KiB --no-output " + flag);
      EXPECT_EQ(o.code, 2) << verb << " " << flag << ": " << o.output();
      const std::string name = flag.substr(0, flag.find(' '));
      EXPECT_NE(o.err.find("error: " + name + ": must be"), std::string::npos)
          << verb << " " << flag << ": " << o.err;
    }
  }
}

// An entry of a list that repeats an earlier one would run the same
// thing twice and write its rows twice (4096 and "4KiB" are one size).
TEST_F(BadInput, AListThatRepeatsAnEntryNamesTheRepeat) {
  expect_refused(R"({"name": "x", "workers": [2, 4, 2], "sizes": [4096]})", "/workers/2");
  expect_refused(R"({"name": "x", "workers": 2, "sizes": [4096, "4KiB"]})", "/sizes/1");
  expect_refused(R"({"name": "x", "workers": 2, "sizes": [4096], "schemes": ["ring", "tree", "ring"]})",
                 "/schemes/2");
  expect_refused(R"({"name": "x", "workers": 2, "sizes": [4096], "schemes": ["ps"], "ps": {"servers": [1, 1]}})",
                 "/ps/servers/1");
  for (const char* flags : {"-n 2,2 -s ring", "-n 2 -s ring,ring"}) {
    const Outcome o = gradex(std::string("simulate -b 1KiB --no-output ") + flags);
    EXPECT_EQ(o.code, 2) << flags << ": " << o.output();
    EXPECT_NE(o.err.find("twice"), std::string::npos) << flags << ": " << o.err;
  }
}

// Nodes of consecutive ranks matter to a shaped network and to the schemes
// built on nodes; a ring on an unshaped one reads nothing of them.
TEST_F(BadInput, RanksPerNodeWhereNothingReadsThemIsRefused) {
  expect_refused(R"({"name": "x", "workers": 4, "sizes": [4096], "ranks_per_node": 2, "schemes": ["ring", "ps"]})",
                 "/ranks_per_node");
  const Outcome flag = gradex("simulate -s tree -n 4 -b 1KiB --ranks-per-node 2 --no-output");
  EXPECT_EQ(flag.code, 2) << flag.output();
  EXPECT_NE(flag.err.find("--ranks-per-node: applies to a shaped network"), std::string::npos) << flag.err;
  for (const char* fine : {"-s ring,hierarchical", "-s ring --link 1GB/s"}) {
    const Outcome o = gradex(std::string("simulate -n 4 -b 1KiB --ranks-per-node 2 --no-output ") + fine);
    EXPECT_EQ(o.code, 0) << fine << ": " << o.output();
  }
}

// `gradex train`'s workload flags are checked by the reader of a
// scenario's "workload": out of range, refused naming the flag (--lr -1 and
// --lr 0 trained at the optimizer's default rate before).
TEST_F(BadInput, TrainFlagsAreCheckedAsTheWorkloadsFieldsAre) {
  const std::string trace = (dir_ / "t.json").string();
  const std::vector<std::string> cases = {
      "--lr -1", "--lr 0", "--epochs 0", "--max-steps 0", "--batch 0", "--momentum 1.5",
      "--trace-steps 0 --trace " + trace, "--staleness -1 --consistency ssp",
      "--fwd-ms -1 --profile resnet50", "--param-scale 0 --profile resnet50"};
  for (const std::string& flags : cases) {
    const Outcome o = gradex("train -w 1 " + flags);
    EXPECT_EQ(o.code, 2) << flags << ": " << o.output();
    const std::string name = flags.substr(0, flags.find(' '));
    EXPECT_NE(o.err.find("error: " + name + ": must be"), std::string::npos) << flags << ": " << o.err;
    EXPECT_EQ(o.out.find("epoch"), std::string::npos) << flags << ": trained: " << o.out;
  }
  EXPECT_FALSE(fs::exists(trace));
}

// A message the slowest allowed link delivers in 65 s, with a 1 s timeout:
// every transport fails the run by its deadline, and writes nothing.
class ShapedRun : public gradex::testing::ProcessTest,
                  public ::testing::WithParamInterface<std::string> {};

TEST_P(ShapedRun, EndsByItsTimeout) {
  const fs::path out = dir_ / "out";
  const fs::path sc = write("slow.json", R"({"name": "t", "workers": 2, "schemes": ["ring"],
      "sizes": [65536], "warmup_iters": 0, "iters": 1, "timeout_ms": 1000,
      "network": {"inter_node": {"bandwidth": "1KB/s"}}})");
  const auto start = std::chrono::steady_clock::now();
  const Outcome o = gradex("run " + sc.string() + " --transport " + GetParam() + " -o " + out.string());
  EXPECT_EQ(o.code, 1) << o.output();
  EXPECT_NE(o.err.find("timed out after 1000 ms"), std::string::npos) << o.err;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_FALSE(fs::exists(out / "results.csv"));
  EXPECT_FALSE(fs::exists(out / "results.json"));
}

INSTANTIATE_TEST_SUITE_P(Transports, ShapedRun, ::testing::Values("inproc", "tcp", "zmq"),
                         [](const auto& info) { return info.param; });

}  // namespace
