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
                        " -s ring -s ps -w 2 -b 10 -e 2 --layers 16 -o " +
                        (dir_ / "out").string());
  ASSERT_EQ(o.code, 0) << o.output();
  EXPECT_NE(o.output().find("ring epoch 2"), std::string::npos) << o.output();
  std::ifstream in(dir_ / "out" / "results.json");
  const auto j = nlohmann::json::parse(in);
  ASSERT_EQ(j["runs"].size(), 2u);  // ring, ps
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

// Every transport trains, the simulator included, and ends where the
// threads do (the same reduction order, the same floats).
TEST_F(TrainCli, EveryTransportTrainsToTheSameParameters) {
  write_tiny_fashion_mnist();
  std::vector<std::string> hashes;
  for (const char* transport : {"inproc", "tcp", "zmq", "sim"}) {
    const fs::path out = dir_ / transport;
    const Outcome o = run("train --data-dir " + dir_.string() + " -s ring -w 2 -b 10 -e 1 --layers 8 " +
                          "--transport " + transport + " -o " + out.string());
    ASSERT_EQ(o.code, 0) << transport << "\n" << o.output();
    std::ifstream in(out / "results.json");
    const auto run0 = nlohmann::json::parse(in)["runs"][0];
    EXPECT_TRUE(run0["replicas_agree"].get<bool>()) << transport;
    ASSERT_TRUE(run0["params_fnv1a"].is_number()) << run0.dump();
    hashes.push_back(run0["params_fnv1a"].dump());
  }
  for (const std::string& h : hashes) EXPECT_EQ(h, hashes.front());
}

// ZeRO-2 runs in the main loop on every transport, under every scheme that
// can shard: the replicas agree, the bytes counted on the wire are the
// declared reduce-scatters and all-gathers, and each worker keeps a shard
// of the reduced gradients.
TEST_F(TrainCli, Zero2TrainsOnEveryTransportWithShardedMemory) {
  write_tiny_fashion_mnist();
  std::vector<std::string> hashes;
  for (const char* transport : {"inproc", "tcp", "zmq", "sim"}) {
    const fs::path out = dir_ / transport;
    const Outcome o = run("train --data-dir " + dir_.string() +
                          " -s all -w 2 -b 10 -e 1 --layers 8 --zero "
                          "--transport " + transport + " -o " + out.string());
    ASSERT_EQ(o.code, 0) << transport << "\n" << o.output();
    EXPECT_NE(o.output().find("ring zero-2 epoch 1"), std::string::npos) << o.output();
    EXPECT_NE(o.output().find("memory per worker"), std::string::npos) << o.output();
    std::ifstream in(out / "results.json");
    const auto j = nlohmann::json::parse(in);
    EXPECT_EQ(j["config"]["zero"], 2);
    // "all" under --zero: the schemes that shard (ring, halving-doubling, ...).
    ASSERT_GE(j["runs"].size(), 2u) << j["runs"].dump();
    EXPECT_EQ(j["runs"][0]["scheme"], "ring zero-2");
    for (const auto& r : j["runs"]) {
      EXPECT_TRUE(r["replicas_agree"].get<bool>()) << transport << r.dump();
      EXPECT_EQ(r["zero"], 2);
      EXPECT_TRUE(r["wire_matches_declared"].get<bool>()) << transport << r.dump();
      // 2 workers: worker 0 keeps the larger half of each bucket.
      const double params = r["params"].get<double>();
      EXPECT_LT(r["reduced_gradient_bytes_per_worker"].get<double>(), 0.6 * 4 * params);
      EXPECT_LT(r["optimizer_state_bytes_per_worker"].get<double>(), 0.6 * 4 * params);
    }
    hashes.push_back(j["runs"][0]["params_fnv1a"].dump());
  }
  for (const std::string& h : hashes) EXPECT_EQ(h, hashes.front());
}

// --no-sync-baseline adds a run with the exchange skipped; each scheme's
// comm-share is measured against it, and its bytes on the wire are none.
TEST_F(TrainCli, NoSyncBaselineGivesEachSchemeItsCommShare) {
  write_tiny_fashion_mnist();
  const Outcome o = run("train --data-dir " + dir_.string() +
                        " -s ring -s ps -w 2 -b 10 -e 1 --layers 16 --no-sync-baseline -o " +
                        (dir_ / "out").string());
  ASSERT_EQ(o.code, 0) << o.output();
  EXPECT_NE(o.output().find("no_sync baseline"), std::string::npos) << o.output();
  std::ifstream in(dir_ / "out" / "results.json");
  const auto j = nlohmann::json::parse(in);
  ASSERT_EQ(j["runs"].size(), 3u);
  const auto& base = j["runs"][2];
  EXPECT_EQ(base["scheme"], "no_sync");
  EXPECT_FALSE(base["synchronised"].get<bool>());
  EXPECT_EQ(base["wire_bytes_sent_per_step"], 0);
  EXPECT_TRUE(j["config"]["no_sync_baseline"].get<bool>());
  for (int i : {0, 1}) {
    const auto& r = j["runs"][i];
    EXPECT_GT(r["wire_bytes_sent_per_step"].get<double>(), 0) << r.dump();
    EXPECT_EQ(r["wire_bytes_sent_per_step"], r["declared_bytes_sent_per_step"]) << r.dump();
    EXPECT_DOUBLE_EQ(r["comm_share"].get<double>(),
                     1 - base["iteration_s"].get<double>() / r["iteration_s"].get<double>());
  }
}

// A flag the run would not read is refused, naming it.
TEST_F(TrainCli, FlagsThatDoNotApplyAreRefused) {
  write_tiny_fashion_mnist();
  const std::string data = "train --data-dir " + dir_.string() + " ";
  for (const auto& [flags, named] : std::vector<std::pair<std::string, std::string>>{
           {"--transport carrier-pigeon", "--transport: unknown transport 'carrier-pigeon' (known: inproc, tcp, zmq, sim)"},
           {"--transport sim --timeout-ms 500", "--timeout-ms: does not apply to --transport sim"},
           {"--timeout-ms 1000 --straggler-ms 1000", "--straggler-ms: must be below --timeout-ms (1000)"},
           {"--consistency asp --staleness 2", "--staleness: applies to --consistency ssp only"},
           {"--latency-us 5", "--latency-us: applies to shaped links (--link-gbps) only"},
           {"--trace-steps 3", "--trace-steps: applies with --trace only"},
           {"--fwd-ms 3", "--fwd-ms: applies to --profile workloads only"},
           {"--profile resnet50 --layers 16", "--layers: does not apply to --profile workloads"},
           {"--consistency bsp --no-sync-baseline", "--no-sync-baseline: does not apply to PS consistency training"},
           {"--consistency bsp --compression fp16", "--compression: does not apply to --consistency"},
           {"--consistency bsp -s ring", "--scheme: does not apply to --consistency"},
           {"--consistency bsp --trace t.json", "--trace: does not apply to --consistency"},
           {"--consistency bsp --zero", "--zero: does not apply to --consistency"},
           {"--consistency bsp --first-bucket-mb 2", "--first-bucket-mb: does not apply to --consistency"},
           {"-s ring -s recursive_doubling --zero",
            "--zero: ZeRO-2 needs a scheme that provides reduce_scatter and all_gather; "
            "'recursive_doubling' provides no reduce_scatter and all_gather"},
           {"-s ring --zero=3 --bucket-mb 2", "--bucket-mb: does not apply under --zero=3"},
           {"-s ring --zero --unit-mb 2", "--unit-mb: applies under --zero=3 only"},
           {"-s ring --zero=1", "--zero: stage 1 is not run"},
           {"-s ring -s tree --servers 2", "--servers: applies to the ps schemes and --consistency only"},
           {"-s ring --ranks-per-node 2", "--ranks-per-node: applies to shaped links (--link-gbps) and to the schemes built on nodes"}}) {
    const Outcome o = run(data + flags);
    EXPECT_EQ(o.code, 2) << flags;
    EXPECT_NE(o.err.find(named), std::string::npos) << flags << ": " << o.err;
  }
}

TEST_F(TrainCli, ProfiledWorkloadWritesATimelineWithBucketSpans) {
  const fs::path trace = dir_ / "trace.json";
  const Outcome o = run("train --profile resnet50 --fwd-ms 2 --param-scale 0.001 -w 2 "
                        "--bucket-mb 0.02 --first-bucket-mb 0.02 --max-steps 3 --trace " + trace.string() +
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
    // A bucket's index and bytes are args, not only words in its name.
    if (e["tid"] == 1) {
      EXPECT_GE(e["args"]["bucket"].get<int>(), 0) << e.dump();
      EXPECT_GT(e["args"]["bytes"].get<long>(), 0) << e.dump();
    }
  }
  EXPECT_GT(buckets, 2 * 2 * 2);  // >2 buckets, 2 steps, 2 ranks
  EXPECT_EQ(compute, 2 * 3 * 2);  // forward, backward, optimizer; 2 steps, 2 ranks
}

}  // namespace
