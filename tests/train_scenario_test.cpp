// Training from a scenario file: the "workload" object parses strictly
// (errors name the JSON pointer), `gradex run` trains in-process and writes
// its results, `gradex launch` trains over TCP processes, and the same
// deterministic run ends with bit-identical parameters either way.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "process_fixture.h"

#include "common/errors.h"
#include "config/scenario.h"
#include "runner/plan.h"
#include "train/train_job.h"

namespace gradex {
namespace {

namespace fs = std::filesystem;

// parse + plan + the name checks, as `gradex validate` does them.
void load(const std::string& text) {
  const RunPlan plan = plan_runs(parse_scenario(nlohmann::json::parse(text)));
  if (plan.scenario.training) check_train_workload(*plan.scenario.training, workload_pointer());
}

TEST(TrainWorkload, ParsesEveryFieldAndDefaultsToAllreduce) {
  const Scenario none = parse_scenario(nlohmann::json::parse(R"({"name": "x", "sizes": [64]})"));
  EXPECT_FALSE(none.training.has_value());
  const Scenario bench = parse_scenario(nlohmann::json::parse(
      R"({"name": "x", "sizes": [64], "workload": {"kind": "allreduce"}})"));
  EXPECT_FALSE(bench.training.has_value());
  const Scenario s = parse_scenario(nlohmann::json::parse(R"({"name": "t", "workers": [2, 4],
      "schemes": ["ring"], "workload": {"kind": "train", "model": "mlp", "layers": "32-8",
      "optimizer": "adam", "lr": 0.01, "momentum": 0.5, "batch": 16, "accumulate": 2,
      "epochs": 3, "max_steps": 7, "seed": 9, "bucket_mb": 0.5, "overlap": false,
      "compression": "bf16", "data_dir": "/d", "train_samples": 100, "trace": "t.json",
      "trace_steps": 2, "no_sync_baseline": true}})"));
  ASSERT_TRUE(s.training.has_value());
  const TrainWorkload& w = *s.training;
  EXPECT_EQ(w.model, "mlp");
  EXPECT_EQ(w.layers, "32-8");
  EXPECT_EQ(w.optimizer, "adam");
  EXPECT_DOUBLE_EQ(w.lr, 0.01);
  EXPECT_EQ(w.batch, 16);
  EXPECT_EQ(w.accumulate, 2);
  EXPECT_EQ(w.epochs, 3);
  EXPECT_EQ(w.max_steps, 7);
  EXPECT_EQ(w.seed, 9u);
  EXPECT_FALSE(w.overlap);
  EXPECT_EQ(w.compression, "bf16");
  EXPECT_EQ(w.train_samples, 100u);
  EXPECT_EQ(w.trace_steps, 2);
  EXPECT_TRUE(w.no_sync_baseline);
  // A profiled model's own fields.
  const Scenario p = parse_scenario(nlohmann::json::parse(R"({"name": "p", "workload": {"kind": "train",
      "model": "resnet50", "fwd_ms": 3, "bwd_ratio": 1.5, "param_scale": 0.01}})"));
  EXPECT_DOUBLE_EQ(p.training->fwd_ms, 3);
  EXPECT_DOUBLE_EQ(p.training->bwd_ratio, 1.5);
  EXPECT_DOUBLE_EQ(p.training->param_scale, 0.01);
  EXPECT_NO_THROW(check_train_workload(*p.training, workload_pointer()));
  EXPECT_TRUE(s.sizes.empty());
  EXPECT_NO_THROW(check_train_workload(w, workload_pointer()));
  EXPECT_EQ(plan_runs(s).runs.size(), 2u);
}

struct Malformed {
  const char* label;
  const char* json;
  const char* field;
};

class MalformedTrainWorkload : public ::testing::TestWithParam<Malformed> {};

TEST_P(MalformedTrainWorkload, NamesThePointer) {
  const Malformed& m = GetParam();
  try {
    load(m.json);
    FAIL() << "accepted: " << m.json;
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), m.field) << e.what();
  }
}

#define TRAIN(extra) R"({"name": "x", "workers": 2, "workload": {"kind": "train")" extra "}}"

INSTANTIATE_TEST_SUITE_P(
    Cases, MalformedTrainWorkload,
    ::testing::Values(
        Malformed{"not_object", R"({"name": "x", "workload": "train"})", "/workload"},
        Malformed{"no_kind", R"({"name": "x", "workload": {"batch": 2}})", "/workload/kind"},
        Malformed{"kind", R"({"name": "x", "workload": {"kind": "inference"}})", "/workload/kind"},
        Malformed{"allreduce_extra", R"({"name": "x", "sizes": [1], "workload": {"kind": "allreduce", "batch": 2}})", "/workload/batch"},
        Malformed{"batch_type", TRAIN(R"(, "batch": "ten")"), "/workload/batch"},
        Malformed{"batch_zero", TRAIN(R"(, "batch": 0)"), "/workload/batch"},
        Malformed{"unknown_key", TRAIN(R"(, "epoch": 2)"), "/workload/epoch"},
        Malformed{"lr", TRAIN(R"(, "lr": -0.1)"), "/workload/lr"},
        Malformed{"overlap", TRAIN(R"(, "overlap": "yes")"), "/workload/overlap"},
        Malformed{"max_steps", TRAIN(R"(, "max_steps": 0)"), "/workload/max_steps"},
        Malformed{"model", TRAIN(R"(, "model": "alexnet")"), "/workload/model"},
        Malformed{"layers", TRAIN(R"(, "layers": "12-x")"), "/workload/layers"},
        Malformed{"optimizer", TRAIN(R"(, "optimizer": "lion")"), "/workload/optimizer"},
        Malformed{"momentum", TRAIN(R"(, "momentum": 1)"), "/workload/momentum"},
        Malformed{"compression", TRAIN(R"(, "compression": "int8")"), "/workload/compression"},
        Malformed{"consistency_name", TRAIN(R"(, "consistency": ["bsp", "eventual"])"), "/workload/consistency"},
        Malformed{"consistency_type", TRAIN(R"(, "consistency": ["bsp", 3])"), "/workload/consistency/1"},
        Malformed{"staleness_alone", TRAIN(R"(, "staleness": 3)"), "/workload/staleness"},
        Malformed{"staleness_without_ssp", TRAIN(R"(, "consistency": ["bsp", "asp"], "staleness": 3)"), "/workload/staleness"},
        Malformed{"trace_steps_alone", TRAIN(R"(, "trace_steps": 3)"), "/workload/trace_steps"},
        Malformed{"no_sync_type", TRAIN(R"(, "no_sync_baseline": 1)"), "/workload/no_sync_baseline"},
        Malformed{"compression_consistency", TRAIN(R"(, "consistency": ["asp"], "compression": "fp16")"), "/workload/compression"},
        Malformed{"trace_consistency", TRAIN(R"(, "consistency": ["asp"], "trace": "t.json")"), "/workload/trace"},
        Malformed{"no_sync_consistency", TRAIN(R"(, "consistency": ["bsp"], "no_sync_baseline": true)"), "/workload/no_sync_baseline"},
        Malformed{"zero_type", TRAIN(R"(, "zero": "two")"), "/workload/zero"},
        Malformed{"zero_stage", TRAIN(R"(, "zero": 1)"), "/workload/zero"},
        Malformed{"zero3_bucket", TRAIN(R"(, "zero": 3, "bucket_mb": 1)"), "/workload/bucket_mb"},
        Malformed{"unit_mb_zero2", TRAIN(R"(, "zero": 2, "unit_mb": 1)"), "/workload/unit_mb"},
        Malformed{"unit_mb_negative", TRAIN(R"(, "zero": 3, "unit_mb": -1)"), "/workload/unit_mb"},
        Malformed{"zero3_first_bucket", TRAIN(R"(, "zero": 3, "first_bucket_mb": 1)"), "/workload/first_bucket_mb"},
        Malformed{"zero_compression", TRAIN(R"(, "zero": 2, "compression": "fp8")"), "/workload/compression"},
        Malformed{"zero_consistency", TRAIN(R"(, "consistency": ["asp"], "zero": 2)"), "/workload/zero"},
        Malformed{"layers_profiled", TRAIN(R"(, "model": "vgg16", "layers": "8")"), "/workload/layers"},
        Malformed{"lr_profiled", TRAIN(R"(, "model": "vgg16", "lr": 0.1)"), "/workload/lr"},
        Malformed{"fwd_ms_mlp", TRAIN(R"(, "fwd_ms": 2)"), "/workload/fwd_ms"},
        Malformed{"sizes", R"({"name": "x", "sizes": [64], "workload": {"kind": "train"}})", "/sizes"},
        Malformed{"iters", R"({"name": "x", "iters": 3, "workload": {"kind": "train"}})", "/iters"},
        Malformed{"timeout_sim", R"({"name": "x", "transport": "sim", "timeout_ms": 100, "workload": {"kind": "train"}})", "/timeout_ms"},
        Malformed{"spin_sim", R"({"name": "x", "transport": "sim", "spin_us": 0, "sizes": [64]})", "/spin_us"},
        Malformed{"consistency_schemes", R"({"name": "x", "schemes": ["ring"], "workload": {"kind": "train", "consistency": ["asp"]}})", "/schemes"},
        Malformed{"consistency_no_server", R"({"name": "x", "ps": {"servers": 0}, "workload": {"kind": "train", "consistency": ["asp"]}})", "/ps/servers"}),
    [](const auto& info) { return std::string(info.param.label); });

// ---- the gradex binary ------------------------------------------------------------

using gradex::testing::Outcome;

class TrainScenario : public gradex::testing::ProcessTest {
 protected:
  void SetUp() override {
    ProcessTest::SetUp();
    write_tiny_fashion_mnist();
  }

  // A tiny deterministic run: 2 workers, 2 epochs of 3 steps of 10 samples.
  fs::path scenario(const std::string& name, const std::string& extra) {
    const fs::path p = dir_ / (name + ".json");
    std::ofstream(p) << R"({"name": ")" << name << R"(", "workers": 2, "schemes": ["ring"],
        "timeout_ms": 20000, "output": ")" << (dir_ / name).string() << R"(",
        "workload": {"kind": "train", "layers": "16", "batch": 10, "epochs": 2, "max_steps": 3,
                     "data_dir": ")" << dir_.string() << R"("})" << extra << "}";
    return p;
  }
  nlohmann::json results(const std::string& name) {
    return nlohmann::json::parse(slurp(dir_ / name / "results.json"));
  }
};

TEST_F(TrainScenario, ScalingIsMeasuredAgainstAOneWorkerRun) {
  const fs::path sc = scenario("sweep", "");
  const Outcome o = gradex("run --workers 1,2 " + sc.string());
  ASSERT_EQ(o.code, 0) << o.err << o.out;
  const auto runs = results("sweep")["runs"];
  ASSERT_EQ(runs.size(), 2u);
  ASSERT_EQ(runs[0]["workers"], 1);
  EXPECT_DOUBLE_EQ(runs[0]["scaling_efficiency"].get<double>(), 1.0);
  const double one = runs[0]["samples_per_s"].get<double>();
  const double two = runs[1]["samples_per_s"].get<double>();
  EXPECT_NEAR(runs[1]["scaling_efficiency"].get<double>(), two / (2 * one), 1e-9);
}

// Two schemes at 1 and 2 workers: each is set against the faster of the
// two one-worker runs, and a no-sync baseline per worker count gives each
// synchronised run its comm-share.
TEST_F(TrainScenario, ScalingUsesTheFastestOneWorkerRunAndNoSyncGivesCommShare) {
  const fs::path sc = scenario("two_schemes", "");
  std::string text = slurp(sc);
  text.replace(text.find(R"(["ring"])"), 8, R"(["ring", "tree"])");
  text.replace(text.find(R"("max_steps": 3,)"), 15, R"("max_steps": 3, "no_sync_baseline": true,)");
  std::ofstream(sc) << text;
  const Outcome o = gradex("run --workers 1,2 " + sc.string());
  ASSERT_EQ(o.code, 0) << o.err << o.out;
  const auto runs = results("two_schemes")["runs"];
  ASSERT_EQ(runs.size(), 6u) << runs.dump();  // 2 x 2 schemes, then 2 baselines
  double best = 0;
  for (const auto& r : runs) {
    if (r["workers"] == 1 && r["synchronised"].get<bool>()) {
      best = std::max(best, r["samples_per_s"].get<double>());
    }
  }
  std::map<int, double> no_sync_step;
  for (const auto& r : runs) {
    if (r["scheme"] == "no_sync") no_sync_step[r["workers"].get<int>()] = r["iteration_s"].get<double>();
  }
  ASSERT_EQ(no_sync_step.size(), 2u);
  for (const auto& r : runs) {
    const int n = r["workers"].get<int>();
    EXPECT_NEAR(r["scaling_efficiency"].get<double>(), r["samples_per_s"].get<double>() / (n * best),
                1e-9) << r.dump();
    if (r["scheme"] == "no_sync") continue;
    EXPECT_NEAR(r["comm_share"].get<double>(), 1 - no_sync_step[n] / r["iteration_s"].get<double>(),
                1e-9) << r.dump();
  }
}

// The baselines run on a launched group too, each rank a process.
TEST_F(TrainScenario, LaunchRunsTheNoSyncBaseline) {
  const fs::path sc = scenario("launched", R"(, "transport": "tcp")");
  std::string text = slurp(sc);
  text.replace(text.find(R"("max_steps": 3,)"), 15, R"("max_steps": 3, "no_sync_baseline": true,)");
  std::ofstream(sc) << text;
  const Outcome o = gradex("launch -n 2 " + sc.string());
  ASSERT_EQ(o.code, 0) << o.err << o.out;
  const auto runs = results("launched")["runs"];
  ASSERT_EQ(runs.size(), 2u) << runs.dump();
  EXPECT_EQ(runs[1]["scheme"], "no_sync");
  EXPECT_EQ(runs[1]["wire_bytes_sent_per_step"], 0);
  EXPECT_EQ(runs[0]["wire_bytes_sent_per_step"], runs[0]["declared_bytes_sent_per_step"]);
  EXPECT_GT(runs[0]["wire_bytes_sent_per_step"].get<double>(), 0);
  EXPECT_TRUE(runs[0]["comm_share"].is_number()) << runs[0].dump();
}

// ZeRO-2 and ZeRO-3 launched as processes over tcp (and ZeRO-3 on the
// simulator) train what they train in process, bit for bit, over the ring
// and over a PS whose dedicated server, a process of its own, replays the
// workers' exchanges in their order; each rank process reports its own
// peak resident size. A scheme without reduce_scatter is refused by name
// before anything runs.
TEST_F(TrainScenario, ZeroLaunchesOverTcpAndMatchesInProcess) {
  const std::string zero = R"(, "transport": "tcp")";
  for (const std::string scheme : {"ring", "ps"}) {
    for (int stage : {2, 3}) {
      const std::string tag = (scheme == "ring" ? "" : scheme) + std::to_string(stage);
      for (const std::string& name : {"zero_inproc" + tag, "zero_tcp" + tag}) {
        const bool tcp = name.starts_with("zero_tcp");
        const fs::path sc = scenario(name, tcp ? zero : "");
        std::string text = slurp(sc);
        text.replace(text.find(R"(["ring"])"), 8, "[\"" + scheme + "\"]");
        text.replace(text.find(R"("max_steps": 3,)"), 15,
                     R"("max_steps": 3, "zero": )" + std::to_string(stage) + ",");
        std::ofstream(sc) << text;
        const Outcome o = gradex((tcp ? "launch -n 2 " : "run ") + sc.string());
        ASSERT_EQ(o.code, 0) << o.err << o.out;
        const std::string label = scheme + " zero-" + std::to_string(stage);
        EXPECT_NE(o.out.find(label + " epoch 2:"), std::string::npos) << o.out;
      }
      const auto a = results("zero_inproc" + tag)["runs"][0];
      const auto b = results("zero_tcp" + tag)["runs"][0];
      EXPECT_EQ(b["scheme"], scheme + " zero-" + std::to_string(stage));
      EXPECT_EQ(b["zero"], stage);
      EXPECT_TRUE(b["replicas_agree"].get<bool>());
      EXPECT_TRUE(b["wire_matches_declared"].get<bool>());
      EXPECT_EQ(a["params_fnv1a"], b["params_fnv1a"]);
      EXPECT_GT(b["process_peak_resident_bytes"].get<double>(), 0);
    }
  }

  const fs::path sim = scenario("zero_sim", R"(, "transport": "sim")");
  std::string sim_text = slurp(sim);
  sim_text.replace(sim_text.find(R"("max_steps": 3,)"), 15, R"("max_steps": 3, "zero": 3,)");
  sim_text.replace(sim_text.find(R"("timeout_ms": 20000,)"), 20, "");
  std::ofstream(sim) << sim_text;
  // On the simulator ZeRO-3 trains what it trains in process, bit for bit.
  const Outcome on_sim = gradex("run " + sim.string());
  ASSERT_EQ(on_sim.code, 0) << on_sim.err << on_sim.out;
  const auto simulated = results("zero_sim")["runs"][0];
  EXPECT_EQ(simulated["scheme"], "ring zero-3");
  EXPECT_TRUE(simulated["wire_matches_declared"].get<bool>());
  EXPECT_EQ(simulated["params_fnv1a"], results("zero_inproc3")["runs"][0]["params_fnv1a"]);

  const fs::path tree = scenario("zero_tree", "");
  std::string text = slurp(tree);
  text.replace(text.find(R"(["ring"])"), 8, R"(["recursive_doubling"])");
  text.replace(text.find(R"("max_steps": 3,)"), 15, R"("max_steps": 3, "zero": 2,)");
  std::ofstream(tree) << text;
  const Outcome refused = gradex("run " + tree.string());
  EXPECT_EQ(refused.code, 2) << refused.out;
  EXPECT_NE(refused.err.find("/workload/zero: ZeRO-2 needs a scheme that provides reduce_scatter "
                             "and all_gather; 'recursive_doubling' provides no"),
            std::string::npos)
      << refused.err;
  EXPECT_FALSE(fs::exists(dir_ / "zero_tree"));
}

TEST_F(TrainScenario, ScalingIsNullWithoutAOneWorkerRun) {
  ASSERT_EQ(gradex("run " + scenario("two", "").string()).code, 0) << err();
  EXPECT_TRUE(results("two")["runs"][0]["scaling_efficiency"].is_null());
}

TEST_F(TrainScenario, RunTrainsInProcessAndWritesResults) {
  const fs::path sc = scenario("inproc", "");
  const Outcome v = gradex("validate " + sc.string());
  EXPECT_EQ(v.code, 0) << v.err;
  EXPECT_NE(v.out.find("train workload: 1 runs"), std::string::npos) << v.out;
  const Outcome o = gradex("run " + sc.string());
  ASSERT_EQ(o.code, 0) << o.err << o.out;
  for (const char* text : {"ring epoch 2:", "compute-ms", "exposed-ms", "samples/s", "compute-share", "scaling"}) {
    EXPECT_NE(o.out.find(text), std::string::npos) << text << "\n" << o.out;
  }
  const auto doc = results("inproc");
  EXPECT_EQ(doc["scenario"]["name"], "inproc");
  EXPECT_TRUE(doc["machine"].contains("cpu"));
  ASSERT_EQ(doc["runs"].size(), 1u);
  EXPECT_EQ(doc["runs"][0]["epochs"].size(), 2u);
  EXPECT_TRUE(doc["runs"][0]["replicas_agree"].get<bool>());
  EXPECT_TRUE(fs::exists(dir_ / "inproc" / "results.csv"));
}

TEST_F(TrainScenario, RunTrainsOnTheSimulator) {
  const fs::path sc = dir_ / "sim.json";
  std::ofstream(sc) << R"({"name": "sim", "workers": 2, "schemes": ["ring", "ps"], "transport": "sim",
      "network": {"inter_node": {"bandwidth": "1GB/s", "latency": "5us"}},
      "output": ")" << (dir_ / "sim").string() << R"(",
      "workload": {"kind": "train", "layers": "16", "batch": 10, "epochs": 2, "max_steps": 3,
                   "data_dir": ")" << dir_.string() << R"("}})";
  const Outcome o = gradex("run " + sc.string());
  ASSERT_EQ(o.code, 0) << o.err << o.out;
  EXPECT_NE(o.out.find("# transport sim"), std::string::npos) << o.out;
  const auto runs = results("sim")["runs"];
  ASSERT_EQ(runs.size(), 2u);
  for (const auto& run : runs) {
    EXPECT_TRUE(run["replicas_agree"].get<bool>());
    EXPECT_EQ(run["epochs"].size(), 2u);
  }
}

// An emulated model times its compute and computes no loss: the report
// leaves its loss and accuracy out (empty cells, null), never writes 0,
// while a trained MLP's are numbers.
TEST_F(TrainScenario, AnEmulatedModelReportsNoLossRatherThanZero) {
  const fs::path sc = dir_ / "emulated.json";
  std::ofstream(sc) << R"({"name": "emulated", "workers": 2, "schemes": ["ring"], "transport": "sim",
      "network": {"inter_node": {"bandwidth": "1GB/s", "latency": "5us"}},
      "output": ")" << (dir_ / "emulated").string() << R"(",
      "workload": {"kind": "train", "model": "resnet50", "fwd_ms": 1, "param_scale": 0.01,
                   "max_steps": 1}})";
  const Outcome o = gradex("run " + sc.string());
  ASSERT_EQ(o.code, 0) << o.err << o.out;
  EXPECT_NE(o.out.find("ring epoch 1: no loss (emulated compute)"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("train loss"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("test accuracy"), std::string::npos) << o.out;
  const auto epoch = results("emulated")["runs"][0]["epochs"][0];
  for (const char* field : {"train_loss", "test_loss", "test_accuracy"}) {
    EXPECT_TRUE(epoch[field].is_null()) << field << ": " << epoch[field];
  }
  const std::string csv = slurp(dir_ / "emulated" / "results.csv");
  EXPECT_NE(csv.find("ring,2,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",1,,,,"), std::string::npos) << csv;  // epoch 1, then three empty cells

  const Outcome mlp = gradex("run " + scenario("mlp", "").string());
  ASSERT_EQ(mlp.code, 0) << mlp.err << mlp.out;
  EXPECT_NE(mlp.out.find("ring epoch 1: train loss "), std::string::npos) << mlp.out;
  const auto trained = results("mlp")["runs"][0]["epochs"][0];
  EXPECT_TRUE(trained["train_loss"].is_number()) << trained;
  EXPECT_TRUE(trained["test_accuracy"].is_number()) << trained;
}
TEST_F(TrainScenario, BadWorkloadIsBadInputNamingThePointer) {
  const fs::path sc = dir_ / "bad.json";
  std::ofstream(sc) << R"({"name": "bad", "output": ")" << (dir_ / "bad").string()
                    << R"(", "workload": {"kind": "train", "batch": "ten"}})";
  for (const char* cmd : {"validate ", "run "}) {
    const Outcome o = gradex(cmd + sc.string());
    EXPECT_EQ(o.code, 2) << cmd;
    EXPECT_NE(o.err.find("#/workload/batch"), std::string::npos) << o.err;
  }
  EXPECT_FALSE(fs::exists(dir_ / "bad"));
}

// Asynchronous PS training over 3 processes (2 workers, 1 server: launch
// -n counts workers) on a
// shaped network: each run trains, and SSP's bound holds in the report
// (a worker that pushed c steps goes on only once the slowest pushed
// c - s, so between its pull and its next push another worker pushes at
// most 2s + 1 times).
TEST_F(TrainScenario, LaunchTrainsAsynchronouslyOverShapedTcp) {
  const fs::path sc = dir_ / "async.json";
  std::ofstream(sc) << R"({"name": "async", "workers": 2, "transport": "tcp", "timeout_ms": 20000,
      "network": {"inter_node": {"bandwidth": "200MB/s", "latency": "20us"}},
      "output": ")" << (dir_ / "async").string() << R"(",
      "workload": {"kind": "train", "consistency": ["asp", "ssp"], "staleness": 1, "layers": "16",
                   "batch": 10, "epochs": 2, "max_steps": 3, "data_dir": ")" << dir_.string() << R"("}})";
  const Outcome o = gradex("launch -n 2 " + sc.string());
  ASSERT_EQ(o.code, 0) << o.err << o.out;
  EXPECT_NE(o.out.find("ssp(s=1) epoch 2:"), std::string::npos) << o.out;
  const auto doc = results("async");
  ASSERT_EQ(doc["staleness"].size(), 2u) << doc.dump();
  for (const auto& s : doc["staleness"]) {
    EXPECT_EQ(s["workers"], 2);
    long applied = 0;
    for (const auto& h : s["histogram"]) applied += h.get<long>();
    EXPECT_EQ(applied, 2 * 2 * 3) << s.dump();  // 2 workers, 2 epochs of 3 steps
  }
  EXPECT_LE(doc["staleness"][1]["max_staleness"].get<long>(), 3) << doc.dump();
  ASSERT_EQ(doc["runs"].size(), 2u);
  EXPECT_EQ(doc["runs"][1]["scheme"], "ps_ssp(s=1)");
}

// A run that leaves a process idle (the PS's server while the ring
// trains) may last longer than timeout_ms: the idle process waits for it
// an epoch at a time. Here each of 6 epochs of the emulated model takes
// about 0.45 s and the ring's run about 2.7 s, against a timeout of 1.5 s
// (before, the server's one wait for the whole run timed out).
TEST_F(TrainScenario, IdleProcessesWaitForALongRunAnEpochAtATime) {
  const fs::path sc = dir_ / "idle.json";
  std::ofstream(sc) << R"({"name": "idle", "workers": 2, "schemes": ["ring", "ps"],
      "transport": "tcp", "timeout_ms": 1500,
      "network": {"inter_node": {"bandwidth": "1GB/s", "latency": "5us"}},
      "output": ")" << (dir_ / "idle").string() << R"(",
      "workload": {"kind": "train", "model": "resnet50", "fwd_ms": 50, "param_scale": 0.01,
                   "epochs": 6, "max_steps": 3}})";
  const Outcome o = gradex("launch -n 2 " + sc.string());
  ASSERT_EQ(o.code, 0) << o.err << o.out;
  const auto runs = results("idle")["runs"];
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0]["scheme"], "ring");
  EXPECT_EQ(runs[1]["scheme"], "ps");
  ASSERT_EQ(runs[0]["epochs"].size(), 6u);
  // The scenario shows something only if the ring trained for longer
  // than one wait may last.
  EXPECT_GT(runs[0]["epochs"].back()["train_seconds"].get<double>(), 1.5)
      << "the ring's run was too short to show anything";
}

// The ring reduces in the same order whether ranks are threads or
// processes, and every process computes the same floats: the final
// parameters must be bit-identical, not merely close.
TEST_F(TrainScenario, LaunchOverTcpMatchesInProcessBitForBit) {
  ASSERT_EQ(gradex("run " + scenario("inproc", "").string()).code, 0);
  const Outcome o = gradex("launch -n 2 " + scenario("tcp", R"(, "transport": "tcp")").string());
  ASSERT_EQ(o.code, 0) << o.err << o.out;
  EXPECT_NE(o.out.find("launched: 2 processes over tcp"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("ring epoch 2:"), std::string::npos) << o.out;
  const auto a = results("inproc")["runs"][0];
  const auto b = results("tcp")["runs"][0];
  EXPECT_TRUE(b["replicas_agree"].get<bool>());
  EXPECT_EQ(a["params_fnv1a"], b["params_fnv1a"]);
  EXPECT_EQ(a["epochs"].back()["test_accuracy"], b["epochs"].back()["test_accuracy"]);
  EXPECT_EQ(a["epochs"].back()["train_loss"], b["epochs"].back()["train_loss"]);
}

}  // namespace
}  // namespace gradex
