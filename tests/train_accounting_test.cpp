// Communication accounting of training: bytes on the wire per step counted
// by the transport and set against what each scheme declares, each
// bucket's exchange within the step, the no-sync baseline and the
// comm-share it gives, scaling against the fastest one-worker run, and the
// trace's bucket args. Data are tiny and synthetic.
#include <gtest/gtest.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "runner/exit_codes.h"
#include "runner/train_output.h"
#include "schemes/registry.h"
#include "train/ps_training.h"
#include "train/report.h"
#include "train/trainer.h"
#include "transport/world.h"

#include "tiny_training.h"

namespace gradex {
namespace {

using testing::tiny_config;
using testing::tiny_data;

using testing::train;
using testing::workers;

double gradient_bytes(const TrainResult& r) { return static_cast<double>(r.param_count) * 4; }

// Every scheme moves per step exactly what it declares: the broadcast
// before the first step and the gathers after the last are not counted.
TEST(WireBytes, EveryPortableSchemeMovesWhatItDeclaresPerStep) {
  for (const std::string& scheme : portable_scheme_names()) {
    const TrainResult r = train(scheme, 3, tiny_config());
    ASSERT_TRUE(r.wire.has_value()) << scheme;
    ASSERT_TRUE(r.declared.has_value()) << scheme;
    EXPECT_GT(r.wire->sent, 0) << scheme;
    EXPECT_DOUBLE_EQ(r.wire->sent, r.declared->sent) << scheme;
    EXPECT_DOUBLE_EQ(r.wire->received, r.declared->received) << scheme;
    EXPECT_TRUE(wire_matches_declared(r)) << scheme;
  }
}

// The ring's count, independently of its declaration: each of the n
// blocks is sent n - 1 times in each of its two phases, so a worker sends
// 2 (n - 1) / n of the gradient per step on average; fp16 halves it.
TEST(WireBytes, RingSendsTwoNMinusOneOverNOfTheGradientAndFp16Half) {
  const TrainResult full = train("ring", 4, tiny_config());
  EXPECT_DOUBLE_EQ(full.wire->sent, 2.0 * 3 / 4 * gradient_bytes(full));
  TrainConfig half = tiny_config();
  half.compression = Compression::fp16;
  const TrainResult f16 = train("ring", 4, half);
  EXPECT_DOUBLE_EQ(f16.wire->sent, full.wire->sent / 2);
}

// PS consistency training declares nothing, but its workers' traffic is
// counted: each step pushes the gradient and (but for the last) pulls the
// parameters; the initial pull is not a step's.
TEST(WireBytes, PsConsistencyWorkersPushTheGradientEachStep) {
  for (Consistency c : {Consistency::bsp, Consistency::asp}) {
    PsTrainConfig ps;
    ps.consistency = c;
    const PsTrainResult r = train_parameter_server(ps, tiny_config(), 2, tiny_data(), Dataset{});
    const double steps = static_cast<double>(r.train.steps);
    ASSERT_TRUE(r.train.wire.has_value());
    EXPECT_FALSE(r.train.declared.has_value());
    EXPECT_DOUBLE_EQ(r.train.wire->sent, gradient_bytes(r.train));
    EXPECT_DOUBLE_EQ(r.train.wire->received, gradient_bytes(r.train) * (steps - 1) / steps);
  }
}

TEST(BucketSpans, OnePerBucketInLaunchOrderWithinTheStep) {
  const TrainResult r = train("ring", 2, tiny_config());
  ASSERT_EQ(r.bucket_spans.size(), r.buckets);
  ASSERT_GT(r.buckets, 2u);
  double bytes = 0, previous_end = 0;
  for (const BucketSpan& s : r.bucket_spans) {
    bytes += static_cast<double>(s.bytes);
    EXPECT_LT(s.start, s.end);
    // One communication thread exchanges the buckets one after another.
    EXPECT_GE(s.start, previous_end);
    previous_end = s.end;
  }
  EXPECT_DOUBLE_EQ(bytes, gradient_bytes(r));
  EXPECT_LE(r.bucket_spans.back().end, r.mean.iteration);
}

// The baseline skips every exchange, dedicated servers included (ps), so
// nothing is moved after the broadcast and each worker steps on its own
// gradient.
TEST(NoSyncBaseline, SkipsTheExchangeAndMovesNothing) {
  for (const std::string scheme : {"ring", "ps"}) {
    const TrainResult r = train(scheme, 2, no_sync_baseline(tiny_config()));
    EXPECT_FALSE(r.synchronised) << scheme;
    ASSERT_TRUE(r.wire.has_value()) << scheme;
    EXPECT_EQ(r.wire->sent, 0) << scheme;
    EXPECT_EQ(r.wire->received, 0) << scheme;
    EXPECT_EQ(r.mean.comm, 0) << scheme;
    EXPECT_TRUE(r.bucket_spans.empty()) << scheme;
    EXPECT_FALSE(r.replicas_agree) << scheme << ": the workers' shards differ";
    EXPECT_GT(r.mean.iteration, 0) << scheme;
  }
}

TrainRun run(const std::string& scheme, int n, double samples_per_s, double iteration_s,
             bool synchronised = true) {
  TrainRun r{scheme, n, {}};
  r.result.samples_per_second = samples_per_s;
  r.result.mean.iteration = iteration_s;
  r.result.synchronised = synchronised;
  r.result.replicas_agree = synchronised;
  return r;
}

// A PS three times slower than the ring on one worker does not score
// better than the ring: both are set against the ring's one-worker run.
TEST(Report, ScalingIsAgainstTheFastestOneWorkerRunOfAnyScheme) {
  const std::vector<TrainRun> runs = {run("ring", 1, 300, 1), run("ps", 1, 100, 3),
                                      run("ring", 2, 540, 1), run("ps", 2, 180, 3),
                                      run(kNoSyncRun, 1, 1000, 1, false)};
  EXPECT_DOUBLE_EQ(*scaling_efficiency(runs, runs[2]), 540.0 / (2 * 300));
  EXPECT_DOUBLE_EQ(*scaling_efficiency(runs, runs[3]), 180.0 / (2 * 300));
  EXPECT_DOUBLE_EQ(*scaling_efficiency(runs, runs[1]), 100.0 / 300);
  const std::vector<TrainRun> no_one = {run("ring", 2, 540, 1), run(kNoSyncRun, 1, 1000, 1, false)};
  EXPECT_FALSE(scaling_efficiency(no_one, no_one[0]).has_value());
}

TEST(Report, CommShareIsOneMinusNoSyncStepOverStepAtTheSameWorkerCount) {
  const std::vector<TrainRun> runs = {run("ring", 2, 0, 0.004), run("ring", 4, 0, 0.008),
                                      run(kNoSyncRun, 2, 0, 0.001, false)};
  EXPECT_DOUBLE_EQ(*comm_share(runs, runs[0]), 0.75);
  EXPECT_FALSE(comm_share(runs, runs[1]).has_value());  // no 4-worker baseline
  EXPECT_FALSE(comm_share(runs, runs[2]).has_value());  // the baseline itself
}

TEST(Report, SummaryCsvAndJsonCarryWireBytesCommShareAndBuckets) {
  std::vector<TrainRun> runs = {run("ring", 2, 100, 0.004), run(kNoSyncRun, 2, 300, 0.001, false)};
  runs[0].result.wire = StepTraffic{3000, 2000};
  runs[0].result.declared = StepTraffic{3000, 2000};
  runs[0].result.bucket_spans = {{1024, 0.001, 0.002}, {2048, 0.002, 0.0035}};
  runs[0].result.epochs = {EpochRecord{}};
  std::ostringstream table;
  print_train_summary(table, runs);
  for (const char* text : {"wire-sent/step", "declared/step", "comm-share", "75.0%", "2.93 KiB",
                           "fastest one-worker", "bucket exchanges", "3.500"}) {
    EXPECT_NE(table.str().find(text), std::string::npos) << text << "\n" << table.str();
  }
  const std::string csv = train_csv(runs);
  EXPECT_NE(csv.find(",comm_share,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",1,1,3000,2000,3000,2000,0.75,"), std::string::npos) << csv;
  const nlohmann::json j = train_json(runs, {});
  EXPECT_EQ(j["runs"][0]["wire_bytes_sent_per_step"], 3000);
  EXPECT_DOUBLE_EQ(j["runs"][0]["comm_share"].get<double>(), 0.75);
  EXPECT_EQ(j["runs"][0]["bucket_spans"][1]["bytes"], 2048);
  EXPECT_DOUBLE_EQ(j["runs"][0]["bucket_spans"][1]["end_s"].get<double>(), 0.0035);
  EXPECT_FALSE(j["runs"][1]["synchronised"].get<bool>());
  EXPECT_TRUE(j["runs"][1]["comm_share"].is_null());
}

// A synchronised run whose traffic is off its scheme's model is wrong; a
// no-sync baseline whose replicas diverge is not.
TEST(Report, OffModelTrafficFailsTheRunButADivergedBaselineDoesNot) {
  TrainOutcome ok;
  ok.runs = {run("ring", 2, 100, 0.004), run(kNoSyncRun, 2, 300, 0.001, false)};
  std::ostringstream out;
  EXPECT_EQ(finish_training(out, ok, {}), kExitOk) << out.str();
  TrainOutcome off = ok;
  off.runs[0].result.wire = StepTraffic{3000, 2000};
  off.runs[0].result.declared = StepTraffic{1500, 2000};
  EXPECT_FALSE(wire_matches_declared(off.runs[0].result));
  EXPECT_EQ(finish_training(out, off, {}), kExitWrong);
  EXPECT_NE(out.str().find("differ from the declared"), std::string::npos) << out.str();
}

// Bucket events carry their index and bytes as args, also once gathered
// from another rank; other events carry none.
TEST(Trace, BucketEventsCarryIndexAndBytesAsArgs) {
  Trace trace;
  const auto world = make_world("inproc", 2, {});
  world->run([&](Comm& comm) {
    Trace own;
    own.add({"forward", comm.rank(), 0, 1.0, 0.5, -1, 0});
    own.add({"bucket 3 (4096 B)", comm.rank(), 1, 1.2, 0.1, 3, 4096});
    gather_trace(comm, comm.rank() == 0 ? trace : own);
    if (comm.rank() == 0) {
      for (const TraceEvent& e : own.events()) trace.add(e);
    }
  });
  const nlohmann::json j = nlohmann::json::parse(trace.json_text());
  int buckets = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    if (e["tid"] == 1) {
      ++buckets;
      EXPECT_EQ(e["args"]["bucket"], 3) << e.dump();
      EXPECT_EQ(e["args"]["bytes"], 4096) << e.dump();
    } else {
      EXPECT_FALSE(e.contains("args")) << e.dump();
    }
  }
  EXPECT_EQ(buckets, 2);
}

}  // namespace
}  // namespace gradex
