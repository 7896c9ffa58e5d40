// ZeRO-2 in the one training loop: each bucket reduce-scattered, each
// worker stepping only its shard with shard-sized optimizer state, the
// parameters all-gathered. It must train to what DDP trains to (as must
// ZeRO-3, whose other tests are in tests/zero3_test.cpp), move the ring
// all-reduce's bytes, take its time on a shaped network, and refuse what
// it cannot run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/errors.h"
#include "schemes/registry.h"
#include "train/mlp.h"
#include "train/sharded_optimizer.h"
#include "train/trainer.h"

#include "tiny_training.h"

namespace gradex {
namespace {

using testing::max_abs_diff;
using testing::sharding_schemes;
using testing::tiny_config;
using testing::tiny_data;

using testing::train;
using testing::workers;

TrainConfig zero2(TrainConfig c) {
  c.zero = 2;
  return c;
}

std::vector<Bucket> tiny_buckets(const TrainConfig& c) {
  const Mlp probe(c.layers, tiny_data());
  return make_buckets(probe.params(), c.bucket_bytes, c.first_bucket_bytes);
}

TEST(ZeroShard, TheWorkersShardsPartitionEveryBucket) {
  const std::vector<Bucket> buckets = tiny_buckets(tiny_config());
  ASSERT_GT(buckets.size(), 1u);
  for (int n : {1, 3, 4, 7}) {
    std::vector<int> owners(Mlp(tiny_config().layers, tiny_data()).param_count(), 0);
    for (int r = 0; r < n; ++r) {
      for (const ParamRange& range : zero_shard(buckets, r, n)) {
        for (std::size_t i = range.offset; i < range.offset + range.count; ++i) ++owners[i];
      }
    }
    EXPECT_TRUE(std::all_of(owners.begin(), owners.end(), [](int k) { return k == 1; })) << n;
  }
}

class ZeroEquivalence
    : public ::testing::TestWithParam<std::tuple<std::string, int, std::string, int>> {};

// N workers x batch b under ZeRO-2 or ZeRO-3 == 1 worker x batch N*b, and
// == DDP with the same scheme: sharding moves the optimizer (and under
// ZeRO-3 the parameters), it does not change it.
TEST_P(ZeroEquivalence, NWorkersMatchOneWorkerWithNTimesTheBatchAndDdp) {
  const auto& [scheme, n, optimizer, stage] = GetParam();
  TrainConfig many = tiny_config(optimizer);
  many.zero = stage;
  TrainConfig one = tiny_config(optimizer);
  one.batch = many.batch * n;
  const TrainResult ref = train("ring", 1, one);
  const TrainResult ddp = train(scheme, n, tiny_config(optimizer));
  const TrainResult got = train(scheme, n, many);
  ASSERT_EQ(got.params.size(), ref.params.size());
  EXPECT_EQ(got.zero, stage);
  EXPECT_EQ(got.steps, ref.steps);
  EXPECT_GT(got.buckets, 1u);
  EXPECT_TRUE(got.replicas_agree);
  EXPECT_LT(max_abs_diff(got.params, ref.params), 1e-4) << scheme << " n=" << n;
  EXPECT_LT(max_abs_diff(got.params, ddp.params), 1e-5) << scheme << " n=" << n;
}

std::vector<std::tuple<std::string, int, std::string, int>> equivalence_cases() {
  std::vector<std::tuple<std::string, int, std::string, int>> cases;
  for (int stage : {2, 3}) {
    for (const std::string& name : sharding_schemes()) {
      for (int n : {2, 3, 4}) cases.emplace_back(name, n, "sgd", stage);
      cases.emplace_back(name, 4, "adam", stage);
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(ShardingSchemes, ZeroEquivalence,
                         ::testing::ValuesIn(equivalence_cases()), [](const auto& info) {
                           return "zero" + std::to_string(std::get<3>(info.param)) + "_" +
                                  std::get<0>(info.param) + "_n" +
                                  std::to_string(std::get<1>(info.param)) + "_" +
                                  std::get<2>(info.param);
                         });

// Worker 0 holds the largest block of each bucket, ceil(count / n): its
// reduced gradients and its optimizer state cover those blocks only.
TEST(Zero2, EachWorkerKeepsAndStepsOnlyItsShard) {
  for (const char* opt : {"sgd", "adam"}) {
    const double per_param = opt == std::string("adam") ? 8 : 4;  // state bytes
    for (int n : {1, 3, 4}) {
      const TrainConfig c = tiny_config(opt);
      std::size_t shard = 0;
      for (const Bucket& b : tiny_buckets(c)) shard += (b.count + n - 1) / n;
      const TrainResult ddp = train("ring", n, c);
      const TrainResult z = train("ring", n, zero2(c));
      EXPECT_EQ(ddp.zero, 0);
      EXPECT_EQ(ddp.reduced_gradient_bytes, 4.0 * ddp.param_count);
      EXPECT_EQ(ddp.optimizer_state_bytes, per_param * ddp.param_count);
      EXPECT_EQ(z.reduced_gradient_bytes, 4.0 * shard) << opt << " n=" << n;
      EXPECT_EQ(z.optimizer_state_bytes, per_param * shard) << opt << " n=" << n;
      if (n > 1) {
        EXPECT_LT(z.optimizer_state_bytes, 0.5 * ddp.optimizer_state_bytes);
      }
    }
  }
}

// Counted by the transport: a reduce-scatter and an all-gather per bucket
// move what the ring's all-reduce of the bucket moves, byte for byte, and
// what the scheme declares for the two collectives.
TEST(Zero2, MovesExactlyTheBytesOfTheRingsAllReduce) {
  for (int n : {2, 3, 4}) {
    const TrainResult ddp = train("ring", n, tiny_config());
    const TrainResult z = train("ring", n, zero2(tiny_config()));
    ASSERT_TRUE(z.wire && ddp.wire && z.declared);
    EXPECT_GT(z.wire->sent, 0);
    EXPECT_DOUBLE_EQ(z.wire->sent, ddp.wire->sent) << n;
    EXPECT_DOUBLE_EQ(z.wire->received, ddp.wire->received) << n;
    EXPECT_DOUBLE_EQ(z.wire->sent, 2.0 * (n - 1) / n * 4.0 * static_cast<double>(z.param_count));
    EXPECT_DOUBLE_EQ(z.declared->sent, z.wire->sent);
    EXPECT_DOUBLE_EQ(z.declared->received, z.wire->received);
  }
  // Every sharding scheme declares what it moves, at either stage.
  for (int stage : {2, 3}) {
    for (const std::string& scheme : sharding_schemes()) {
      TrainConfig c = tiny_config();
      c.zero = stage;
      const TrainResult z = train(scheme, 3, c);
      ASSERT_TRUE(z.wire && z.declared) << scheme << " zero-" << stage;
      EXPECT_DOUBLE_EQ(z.declared->sent, z.wire->sent) << scheme << " zero-" << stage;
      EXPECT_DOUBLE_EQ(z.declared->received, z.wire->received) << scheme << " zero-" << stage;
    }
  }
}

// On the simulator's virtual clock, over 0.05 GB/s links: ZeRO-2's two
// halves take what the ring's all-reduce takes (same bytes, same links),
// within 0.1%, and no less than the bytes need. The emulated compute is
// charged exactly (train/rank_time.h), so the comparison is deterministic.
TEST(Zero2, ShapedItsCommunicationTakesWhatTheRingsAllReduceTakes) {
  EmulationConfig emu;
  emu.forward_seconds = 0.002;
  emu.param_scale = 0.005;
  const int n = 3;
  const ModelSource source = testing::emulated_resnet50(emu, n * 2);
  TrainConfig c;
  c.batch = 1;
  c.max_steps = 2;
  c.bucket_bytes = 128 << 10;
  c.first_bucket_bytes = c.bucket_bytes;
  c.evaluate = false;
  c.overlap = false;
  const LinkSpec link{0.05e9, 10e-6};
  const TransportOptions network = testing::shaped_links(n, link);
  const double gradient = static_cast<double>(source.make_model()->param_count()) * 4;
  const double exchange = 2.0 * (n - 1) / n * gradient / link.bytes_per_second;
  const TrainResult ddp = train_data_parallel("ring", workers(n), c, source, "sim", network);
  const TrainResult z = train_data_parallel("ring", workers(n), zero2(c), source, "sim", network);
  EXPECT_GE(z.mean.comm, exchange);
  EXPECT_GE(ddp.mean.comm, exchange);
  EXPECT_NEAR(z.mean.comm / ddp.mean.comm, 1.0, 1e-3) << z.mean.comm << " vs " << ddp.mean.comm;
  EXPECT_FALSE(z.payloads);  // an emulated model on the simulator: sizes only
}

// A PS's dedicated servers replay ZeRO-2's step (a reduce-scatter per
// bucket, then an all-gather per bucket) on the simulator's fibers as on
// threads: the same values bit for bit, and the declared bytes. A worker
// pushes S and S/N and pulls S/N and S, (N+1)/N times DDP's push and pull.
TEST(Zero2, OverDedicatedServersTheSimulatorMatchesThreads) {
  ModelSource source;
  const TrainConfig c = zero2(tiny_config("adam"));
  source.make_model = [&c] { return std::make_unique<Mlp>(c.layers, tiny_data()); };
  source.samples = tiny_data().size();
  for (const char* scheme : {"ps", "ps_pipelined"}) {
    SchemeOptions o = workers(3);
    o.servers = 2;
    const TrainResult threads = train_data_parallel(scheme, o, c, source, "inproc", {});
    const TrainResult fibers = train_data_parallel(scheme, o, c, source, "sim", {});
    const TrainResult ddp = train_data_parallel(scheme, o, tiny_config("adam"), source, "sim", {});
    EXPECT_TRUE(fibers.replicas_agree) << scheme;
    EXPECT_EQ(fibers.params, threads.params) << scheme;
    ASSERT_TRUE(fibers.wire && fibers.declared && ddp.wire) << scheme;
    EXPECT_DOUBLE_EQ(fibers.declared->sent, fibers.wire->sent) << scheme;
    EXPECT_DOUBLE_EQ(fibers.declared->received, fibers.wire->received) << scheme;
    EXPECT_NEAR(fibers.wire->sent / ddp.wire->sent, 4.0 / 3.0, 0.02) << scheme;
  }
}

// Refused by name at either stage: a scheme without reduce_scatter
// (recursive doubling, which swaps whole buffers; the hybrid PS, whose
// workers' keys go round a ring).
TEST(Zero2, SchemesThatCannotShardAreRefusedByName) {
  for (int stage : {2, 3}) {
    for (const char* scheme : {"recursive_doubling", "ps_hybrid"}) {
      TrainConfig c = tiny_config();
      c.zero = stage;
      try {
        train(scheme, 3, c);
        FAIL() << scheme << " trained under ZeRO-" << stage;
      } catch (const ConfigError& e) {
        EXPECT_EQ(e.field(), "zero");
        EXPECT_NE(e.reason().find("ZeRO-" + std::to_string(stage) +
                                  " needs a scheme that provides reduce_scatter and all_gather; '" +
                                  scheme + "' provides no reduce_scatter"),
                  std::string::npos)
            << e.what();
      }
    }
  }
}

TEST(Zero2, OtherStagesAreRefused) {
  for (int stage : {1, 4}) {
    TrainConfig c = tiny_config();
    c.zero = stage;
    try {
      train("ring", 2, c);
      FAIL() << "stage " << stage << " ran";
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.field(), "zero") << e.what();
    }
  }
}

// Compressed, the reduce-scatter moves the bucket in 16 bits and each
// worker widens its own block: over the ring the same values as DDP's
// compressed all-reduce (whose first half is that reduce-scatter), bit for
// bit, and half the f32 reduce-scatter's bytes; the parameters' all-gather
// stays f32, so the replicas agree exactly.
TEST(Zero2, CompressedMatchesCompressedDdpAndHalvesTheReduceScatter) {
  for (Compression c : {Compression::fp16, Compression::bf16}) {
    for (int n : {2, 3, 4}) {
      TrainConfig ddp_config = tiny_config();
      ddp_config.compression = c;
      const TrainResult ddp = train("ring", n, ddp_config);
      const TrainResult z = train("ring", n, zero2(ddp_config));
      const TrainResult plain = train("ring", n, zero2(tiny_config()));
      SCOPED_TRACE(compression_name(c) + " n " + std::to_string(n));
      EXPECT_TRUE(z.replicas_agree);
      EXPECT_EQ(z.params, ddp.params);
      ASSERT_TRUE(z.wire && plain.wire && z.declared);
      EXPECT_DOUBLE_EQ(z.declared->sent, z.wire->sent);
      // f32 reduce-scatter + f32 all-gather against 16-bit + f32: 3/4.
      EXPECT_DOUBLE_EQ(z.wire->sent, 0.75 * plain.wire->sent);
    }
  }
  for (const std::string& scheme : sharding_schemes()) {
    TrainConfig config = zero2(tiny_config());
    config.compression = Compression::fp16;
    const TrainResult z = train(scheme, 3, config);
    EXPECT_TRUE(z.replicas_agree) << scheme;
    ASSERT_TRUE(z.wire && z.declared) << scheme;
    EXPECT_DOUBLE_EQ(z.declared->sent, z.wire->sent) << scheme;
  }
}

// The no-sync baseline skips the exchange: each worker steps its own whole
// gradient, replicated.
TEST(Zero2, TheNoSyncBaselineStepsReplicated) {
  const TrainResult r = train("ring", 2, no_sync_baseline(zero2(tiny_config())));
  EXPECT_EQ(r.zero, 0);
  EXPECT_EQ(r.reduced_gradient_bytes, 4.0 * r.param_count);
}

}  // namespace
}  // namespace gradex
