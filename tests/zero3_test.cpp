// ZeRO-3 (FSDP's full sharding) in the one training loop: parameters,
// gradients and optimizer state sharded, each layer all-gathered before
// its forward and again before its backward, its gradient reduce-scattered.
// It must train to what DDP trains to (the equivalence suite, shared with
// ZeRO-2, is in tests/zero_test.cpp), move 1.5x DDP's bytes, hold about
// 1/N of the model per worker, and refuse what it cannot run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "common/errors.h"
#include "schemes/registry.h"
#include "train/mlp.h"
#include "train/profiled_model.h"
#include "train/profiles.h"
#include "train/report.h"
#include "train/sharded_params.h"
#include "train/trainer.h"
#include "transport/world.h"

#include "tiny_training.h"

namespace gradex {
namespace {

using testing::max_abs_diff;
using testing::tiny_config;
using testing::tiny_data;
using testing::train;
using testing::workers;

TrainConfig zero3(TrainConfig c) {
  c.zero = 3;
  return c;
}

// Deeper than the tiny model, with equal layers, so that a few gathered
// layers are small beside the whole.
TrainConfig deep_config(const std::string& optimizer = "sgd") {
  TrainConfig c = tiny_config(optimizer);
  c.layers = {12};
  c.layers.insert(c.layers.end(), 16, 32);  // sixteen hidden layers of 32
  c.layers.push_back(4);
  return c;
}

// Over the ring, with DDP's buckets cut where ZeRO-3's layers are, the
// parameters agree to float rounding: the same sums, the unit buffers
// aligned as the flat vector.
TEST(Zero3, OverTheRingMatchesDdpBitForBit) {
  for (int n : {2, 3, 4}) {
    TrainConfig ddp_config = tiny_config();
    ddp_config.bucket_bytes = 1;  // one bucket per parameter, as ZeRO-3's layers split them
    ddp_config.first_bucket_bytes = 1;
    const TrainResult ddp = train("ring", n, ddp_config);
    const TrainResult z = train("ring", n, zero3(tiny_config()));
    EXPECT_LT(max_abs_diff(z.params, ddp.params), 1e-6) << n;
  }
}

// Micro-batches accumulate into the whole layer gradients, which the last
// one's backward reduce-scatters: K micro-batches of b == one of K*b.
TEST(Zero3, AccumulatedMicroBatchesMatchOneLargerBatch) {
  TrainConfig acc = zero3(tiny_config());
  acc.accumulate = 2;
  TrainConfig big = tiny_config();
  big.batch = 2 * acc.batch;
  const TrainResult a = train("ring", 2, acc);
  const TrainResult b = train("ring", 2, big);
  EXPECT_LT(max_abs_diff(a.params, b.params), 1e-5);
}

// Counted by the transport: per layer an all-gather before forward, one
// before backward and a reduce-scatter: 3 (n-1)/n of the model per worker
// over the ring, 1.5x DDP's all-reduce, and what the ring declares.
TEST(Zero3, MovesOneAndAHalfTimesDdpsBytes) {
  for (int n : {2, 3, 4}) {
    const TrainResult ddp = train("ring", n, tiny_config());
    const TrainResult z = train("ring", n, zero3(tiny_config()));
    ASSERT_TRUE(z.wire && ddp.wire && z.declared);
    EXPECT_DOUBLE_EQ(z.wire->sent, 1.5 * ddp.wire->sent) << n;
    EXPECT_DOUBLE_EQ(z.wire->received, 1.5 * ddp.wire->received) << n;
    EXPECT_DOUBLE_EQ(z.wire->sent, 3.0 * (n - 1) / n * 4.0 * static_cast<double>(z.param_count));
    EXPECT_DOUBLE_EQ(z.declared->sent, z.wire->sent);
  }
  // Every scheme's declaration: tests/zero_test.cpp, with ZeRO-2's.
}

// A worker holds its shard of every layer and at most two layers whole
// (the one in use and the prefetched one), of parameters and of gradients.
// With sixteen equal hidden layers over 4 workers that is under half of
// the replicated model, and the optimizer state is a quarter.
TEST(Zero3, EachWorkerHoldsItsShardAndAFewLayers) {
  const TrainConfig c = deep_config("adam");
  const Mlp probe(c.layers, tiny_data());
  std::size_t largest = 0;
  for (const ParamUnit& u : probe.units()) largest = std::max(largest, u.count);
  for (int n : {1, 2, 4}) {
    std::size_t shard = 0;
    for (const ParamUnit& u : probe.units()) shard += (u.count + n - 1) / n;
    const TrainResult ddp = train("ring", n, c);
    const TrainResult z = train("ring", n, zero3(c));
    const double whole = 4.0 * static_cast<double>(probe.param_count());
    EXPECT_EQ(ddp.parameter_bytes, whole);
    EXPECT_EQ(ddp.gradient_bytes, whole);
    EXPECT_EQ(z.optimizer_state_bytes, 8.0 * shard) << n;
    EXPECT_EQ(z.reduced_gradient_bytes, 4.0 * shard) << n;
    EXPECT_LE(z.parameter_bytes, 4.0 * (shard + 2 * largest)) << n;
    EXPECT_LE(z.gradient_bytes, 4.0 * (shard + 2 * largest)) << n;
    EXPECT_GT(z.parameter_bytes, 4.0 * (shard + largest)) << n;  // one layer is whole in use
    if (n == 4) {
      EXPECT_LT(z.parameter_bytes, 0.5 * whole);
      EXPECT_LT(z.gradient_bytes, 0.5 * whole);
    }
  }
}

// The MLP asks for a layer's gradient only after releasing its values:
// the input gradient, their only use in backward, comes first. Under
// ZeRO-3 a worker never holds a layer whole twice over.
TEST(Zero3, TheMlpReleasesALayerBeforeTakingItsGradient) {
  class Recorder final : public LayerAccess {
   public:
    Recorder(const Model& model, std::vector<float>& params, std::vector<float>& grads)
        : flat_(params, grads, model.units()), held_(model.units().size(), false) {}
    const float* params(std::size_t unit) override {
      held_.at(unit) = true;
      most_ = std::max(most_, static_cast<std::size_t>(std::count(held_.begin(), held_.end(), true)));
      return flat_.params(unit);
    }
    void release_params(std::size_t unit) override { held_.at(unit) = false; }
    float* grads(std::size_t unit) override {
      if (held_.at(unit)) held_with_gradient_.push_back(unit);
      return flat_.grads(unit);
    }
    FlatAccess flat_;
    std::vector<bool> held_;
    std::size_t most_ = 0;
    std::vector<std::size_t> held_with_gradient_;
  };
  const TrainConfig c = deep_config();
  Mlp model(c.layers, tiny_data());
  std::vector<float> params(model.param_count()), grads(model.param_count(), 0.0f);
  model.init(params, 7);
  Recorder access(model, params, grads);
  const std::vector<std::size_t> samples = {0, 1, 2, 3};
  model.train_step(access, samples, 1.0f, {}, {});
  EXPECT_EQ(access.held_with_gradient_, std::vector<std::size_t>{});
  EXPECT_EQ(access.most_, 1u);
  // The same gradients as through whole vectors.
  std::vector<float> whole(model.param_count(), 0.0f);
  model.train_step(params, samples, whole, 1.0f, {});
  EXPECT_EQ(grads, whole);
}

// With a link slow enough that every reduce-scatter is still in flight as
// the next layer's backward begins, a worker holds at most two gathered
// layers and one gradient beside its shards: the next gather is posted
// (and its buffer taken) once the current one has ended, so after the
// reduce-scatters queued before it, which freed their gradients.
TEST(Zero3, HoldsTwoGatheredLayersAndOneGradientWhileTheLinkLags) {
  TrainConfig c = zero3(deep_config("adam"));
  c.max_steps = 2;
  c.evaluate = false;
  const Mlp probe(c.layers, tiny_data());
  ModelSource source;
  source.make_model = [&c] { return std::make_unique<Mlp>(c.layers, tiny_data()); };
  source.samples = tiny_data().size();
  std::size_t largest = 0;
  for (const ParamUnit& u : probe.units()) largest = std::max(largest, u.count);
  const int n = 2;
  std::size_t shard = 0;
  for (const ParamUnit& u : probe.units()) shard += (u.count + n - 1) / n;
  const TransportOptions network = testing::shaped_links(n, {0.01e9, 10e-6});
  const TrainResult z = train_data_parallel("ring", workers(n), c, source, "inproc", network);
  EXPECT_LE(z.held_bytes, 4.0 * (2 * shard + 3 * largest));
  EXPECT_GT(z.held_bytes, 4.0 * (2 * shard + largest));
}

// FSDP's size-based auto-wrap: consecutive layers merged into units of at
// least unit_bytes, each a bucket, gathered and reduce-scattered whole.
// The model trains to the same parameters whatever the wrapping, and a
// unit as large as the model is gathered whole.
TEST(Zero3, WrapsLayersIntoUnitsOfAtLeastTheGivenSize) {
  const TrainConfig c = deep_config();
  const Mlp probe(c.layers, tiny_data());
  const std::vector<ParamUnit> layers = probe.units();
  const std::size_t layer_bytes = layers[1].count * sizeof(float);
  const std::vector<ParamUnit> pairs = wrap_units(layers, 2 * layer_bytes);
  EXPECT_EQ(wrap_units(layers, 0).size(), layers.size());
  EXPECT_EQ(wrap_units(layers, 1 << 30).size(), 1u);
  ASSERT_LT(pairs.size(), layers.size());
  std::size_t covered = 0;
  for (std::size_t g = 0; g < pairs.size(); ++g) {
    EXPECT_EQ(pairs[g].offset, covered);
    covered += pairs[g].count;
    if (g + 1 < pairs.size()) {
      EXPECT_GE(pairs[g].count * sizeof(float), 2 * layer_bytes) << g;
    }
  }
  EXPECT_EQ(covered, probe.param_count());

  const TrainResult per_layer = train("ring", 3, zero3(c));
  TrainConfig wrapped = zero3(c);
  wrapped.unit_bytes = 2 * layer_bytes;
  const TrainResult grouped = train("ring", 3, wrapped);
  wrapped.unit_bytes = 1 << 30;
  const TrainResult whole = train("ring", 3, wrapped);
  EXPECT_EQ(per_layer.buckets, layers.size());
  EXPECT_EQ(grouped.buckets, pairs.size());
  EXPECT_EQ(whole.buckets, 1u);
  // Other block boundaries, other summation orders: equal to rounding.
  EXPECT_LT(max_abs_diff(grouped.params, per_layer.params), 1e-4);
  EXPECT_LT(max_abs_diff(whole.params, per_layer.params), 1e-4);
  EXPECT_TRUE(grouped.replicas_agree);
  // One unit: the whole model is held while it is used.
  EXPECT_GE(whole.parameter_bytes, 4.0 * static_cast<double>(probe.param_count()));
  EXPECT_LT(per_layer.parameter_bytes, grouped.parameter_bytes);
}

// Every layer's values, gathered from the shards, are worker 0's initial
// ones: the store starts where a replicated run starts.
TEST(Zero3, InitialShardsAreWorkerZerosValues) {
  const TrainConfig c = deep_config();
  const Mlp mlp(c.layers, tiny_data());
  std::vector<float> whole(mlp.param_count());
  mlp.init(whole, 5);
  for (std::size_t u = 0; u < mlp.units().size(); ++u) {
    const ParamUnit unit = mlp.units()[u];
    std::vector<float> part(unit.count);
    mlp.init_unit(u, part, 5);
    EXPECT_TRUE(std::equal(part.begin(), part.end(),
                           whole.begin() + static_cast<std::ptrdiff_t>(unit.offset)))
        << u;
  }
}

TEST(Zero3, IsRefusedWithoutReduceScatterOrAllGather) {
  try {
    train("recursive_doubling", 3, zero3(tiny_config()));
    FAIL() << "recursive_doubling trained under ZeRO-3";
  } catch (const ConfigError& e) {
    EXPECT_NE(e.reason().find("ZeRO-3 needs a scheme that provides reduce_scatter"),
              std::string::npos)
        << e.what();
  }
}

// Worker 0's exchanges as the Reducer's thread runs them (the broadcast
// of the initial values aside, which servers sit out), over a ring.
class RecordingExchange final : public GradientExchange {
 public:
  explicit RecordingExchange(int n) : inner_(make_scheme("ring", testing::workers(n))) {}
  int workers() const override { return inner_.workers(); }
  int endpoints() const override { return inner_.endpoints(); }
  void allreduce(Comm& comm, Tensor data, ReduceOp op) override {
    record(comm, {data.count, data.dtype, op, Collective::all_reduce});
    inner_.allreduce(comm, data, op);
  }
  void serve(Comm& comm, const ExchangeCall& call) override { inner_.serve(comm, call); }
  void broadcast(Comm& comm, Tensor data) override { inner_.broadcast(comm, data); }
  bool provides(Collective c) const override { return inner_.provides(c); }
  void reduce_scatter(Comm& comm, Tensor data, ReduceOp op) override {
    record(comm, {data.count, data.dtype, op, Collective::reduce_scatter});
    inner_.reduce_scatter(comm, data, op);
  }
  void all_gather(Comm& comm, Tensor data) override {
    record(comm, {data.count, data.dtype, ReduceOp::sum, Collective::all_gather});
    inner_.all_gather(comm, data);
  }
  const std::vector<ExchangeCall>& calls() const { return calls_; }

 private:
  void record(Comm& comm, const ExchangeCall& call) {
    if (comm.rank() == 0) calls_.push_back(call);  // only worker 0's thread
  }
  SchemeExchange inner_;
  std::vector<ExchangeCall> calls_;
};

// A test set of three evaluation chunks: scoring takes three passes.
const Dataset& scored_data() {
  static const Dataset d = synthetic_dataset(2 * Mlp::kEvaluationChunk + 1, 12, 4, 11);
  return d;
}

// A PS's dedicated servers replay served_exchanges() call for call, so it
// must be what the workers post, in their order: the MLP and an emulated
// ResNet-50, per layer and wrapped into groups, overlapped or not, with
// two micro-batches, compressed, on threads and on the simulator.
TEST(Zero3, TheServersListIsTheOrderTheWorkersPostIn) {
  struct Case {
    const char* what;
    bool emulated;
    std::size_t unit_bytes;
    bool overlap;
    int accumulate;
    Compression compression;
    const char* transport;
  };
  const Case cases[] = {
      {"mlp", false, 0, true, 1, Compression::none, "inproc"},
      {"mlp, groups", false, 3000, true, 1, Compression::none, "inproc"},
      {"mlp, no overlap", false, 0, false, 1, Compression::none, "inproc"},
      {"mlp, 2 micro-batches, fp16", false, 0, true, 2, Compression::fp16, "inproc"},
      {"mlp on sim", false, 0, true, 1, Compression::none, "sim"},
      {"resnet50", true, 0, true, 1, Compression::none, "inproc"},
      {"resnet50, groups, 2 micro-batches", true, 4 << 20, true, 2, Compression::none, "sim"},
      {"resnet50, no overlap", true, 0, false, 1, Compression::bf16, "sim"}};
  constexpr int n = 3;
  for (const Case& k : cases) {
    SCOPED_TRACE(k.what);
    TrainConfig c = zero3(deep_config());
    c.unit_bytes = k.unit_bytes;
    c.overlap = k.overlap;
    c.accumulate = k.accumulate;
    c.compression = k.compression;
    c.epochs = 2;
    c.max_steps = 2;
    c.evaluate = true;
    EmulationConfig emu;
    emu.forward_seconds = 0.001;
    emu.param_scale = 0.002;
    // The MLP is scored after each epoch, a pass per chunk of its test set.
    const ModelSource source = k.emulated ? testing::emulated_resnet50(emu, 240)
                                          : mlp_source(c, borrowed(tiny_data()), borrowed(scored_data()));
    RecordingExchange exchange(n);
    TransportOptions options;
    options.phantom_payloads = carries_sizes_only(k.transport, k.emulated);
    make_world(k.transport, n, options)->run([&](Comm& comm) {
      train_rank(comm, exchange, c, source);
    });
    const long steps = training_steps_per_epoch(c, source.samples, n);
    EXPECT_EQ(scoring_passes(c, source), k.emulated ? 0u : 3u);
    std::vector<ExchangeCall> served;
    served_exchanges(c, *source.make_model(), steps, options.phantom_payloads,
                     scoring_passes(c, source))
        .for_each([&](const ExchangeCall& call) { served.push_back(call); });
    EXPECT_GT(served.size(), 0u);
    EXPECT_TRUE(exchange.calls() == served) << exchange.calls().size() << " posted, "
                                            << served.size() << " listed";
  }
}

// On the simulator every rank is a fiber: the gathers and reduce-scatters
// run on its clock as the communication thread would run them, in the same
// order, so the values are those of the threads, bit for bit.
TEST(Zero3, OnTheSimulatorMatchesInProcessBitForBit) {
  const TrainConfig c = zero3(deep_config("adam"));
  ModelSource source;
  source.make_model = [&c] { return std::make_unique<Mlp>(c.layers, tiny_data()); };
  source.samples = tiny_data().size();
  for (const std::string& scheme : testing::sharding_schemes()) {
    if (scheme == "auto") continue;  // it times its candidates: wall clock against virtual
    const TrainResult threads = train_data_parallel(scheme, workers(3), c, source, "inproc", {});
    const TrainResult fibers = train_data_parallel(scheme, workers(3), c, source, "sim", {});
    EXPECT_TRUE(fibers.payloads) << scheme;
    EXPECT_TRUE(fibers.replicas_agree) << scheme;
    EXPECT_EQ(fibers.params, threads.params) << scheme;
    ASSERT_TRUE(fibers.wire && fibers.declared) << scheme;
    EXPECT_TRUE(wire_matches_declared(fibers)) << scheme;
  }
  // Two micro-batches a step: the first pass's gathers, no reduce-scatter.
  TrainConfig acc = c;
  acc.accumulate = 2;
  EXPECT_EQ(train_data_parallel("ring", workers(2), acc, source, "sim", {}).params,
            train_data_parallel("ring", workers(2), acc, source, "inproc", {}).params);
}

// An emulated ResNet-50 under ZeRO-3 on the simulator: sizes only, 1.5x
// DDP's bytes as on threads, and the step's timeline is the threaded one's:
// the step lasts its compute plus the time the compute stood still (for a
// gathered layer, or at the end for the last reduce-scatter).
// - No compute to hide behind: the exchanges run back to back, each
//   posted as the one before it ends, and the step is exactly their sum.
// - Compute far longer than the exchanges: every gather but the first is
//   prefetched behind the layer before it, and every reduce-scatter but
//   the last leaves under the backward pass, so little is exposed.
TEST(Zero3, OnTheSimulatorTheStepIsTheThreadedTimeline) {
  constexpr int n = 4;
  TrainConfig c;
  c.batch = 1;
  c.max_steps = 2;
  c.evaluate = false;
  const LinkSpec link{1e9, 5e-6};
  const TransportOptions network = testing::shaped_links(n, link);
  EmulationConfig emu;
  emu.param_scale = 0.01;
  emu.backward_ratio = 2;
  const auto run = [&](double forward_seconds, int zero) {
    emu.forward_seconds = forward_seconds;
    c.zero = zero;
    return train_data_parallel("ring", workers(n), c, testing::emulated_resnet50(emu, 64), "sim",
                               network);
  };
  const TrainResult idle = run(0.0, 3);
  EXPECT_FALSE(idle.payloads);
  ASSERT_TRUE(idle.wire && idle.declared);
  EXPECT_TRUE(wire_matches_declared(idle));
  EXPECT_DOUBLE_EQ(idle.wire->sent, 1.5 * run(0.0, 0).wire->sent);
  EXPECT_EQ(idle.mean.compute, 0.0);
  EXPECT_GT(idle.mean.comm, 0.0);
  EXPECT_NEAR(idle.mean.iteration, idle.mean.comm, 1e-9);
  EXPECT_NEAR(idle.mean.exposed, idle.mean.comm, 1e-9);

  const TrainResult busy = run(1.0, 3);
  EXPECT_NEAR(busy.mean.compute, 3.0, 1e-9);
  EXPECT_NEAR(busy.mean.iteration, busy.mean.compute + busy.mean.exposed, 1e-9);
  EXPECT_NEAR(busy.mean.comm, idle.mean.comm, 0.01 * idle.mean.comm) << "the same exchanges";
  EXPECT_GT(busy.mean.exposed, 0.0) << "the first gather has nothing before it";
  EXPECT_LT(busy.mean.exposed, 0.1 * busy.mean.comm);
  const TrainResult again = run(1.0, 3);
  EXPECT_EQ(again.mean.iteration, busy.mean.iteration);
  EXPECT_EQ(again.mean.exposed, busy.mean.exposed);

  // Held at once: the shard and at most two layers whole, as on threads.
  const ProfiledModel probe(model_profile("resnet50"), emu);
  std::size_t shard = 0, largest = 0;
  for (const ParamUnit& u : probe.units()) {
    shard += (u.count + n - 1) / n;
    largest = std::max(largest, u.count);
  }
  EXPECT_LE(busy.parameter_bytes, 4.0 * (shard + 2 * largest));
  EXPECT_GT(busy.parameter_bytes, 4.0 * (shard + largest));
}

}  // namespace
}  // namespace gradex
