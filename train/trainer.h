// The data-parallel training loop, the same under every scheme: each
// worker reads its shard of a seeded per-epoch shuffle, parameters start
// from worker 0's (broadcast), each step runs K micro-batches (the first
// K-1 accumulate locally, like DDP's no_sync), the last backward feeds the
// bucketed Reducer, and every worker applies the same optimizer step to the
// same averaged gradient. One rank's loop runs over any Comm (train_rank):
// threads of one process (InprocWorld), or processes over TCP / ZeroMQ.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/comm.h"

#include "transport/inproc/world.h"
#include "common/scheme.h"
#include "config/workload.h"
#include "train/fashion_mnist.h"
#include "train/gradient_exchange.h"
#include "train/model.h"
#include "train/optimizer.h"
#include "train/trace.h"

namespace gradex {

struct Dataset;  // train/dataset.h

struct TrainConfig {
  // input, hidden..., classes
  std::vector<int> layers{kFashionMnistFeatures, 256, 256, kFashionMnistClasses};
  OptimizerConfig optimizer;
  int batch = 64;       // samples per worker per micro-batch
  int accumulate = 1;   // K micro-batches per optimizer step
  int epochs = 1;
  long max_steps = -1;  // optimizer steps per epoch at most (-1: the whole shard)
  std::uint64_t seed = 1;
  // Buckets as torch DDP fills them (train/reducer.h: make_buckets).
  std::size_t bucket_bytes = static_cast<std::size_t>(kDdpBucketMb * (1 << 20));
  std::size_t first_bucket_bytes = static_cast<std::size_t>(kDdpFirstBucketMb * (1 << 20));
  bool overlap = true;
  Compression compression = Compression::none;
  bool evaluate = true;  // worker 0 measures the test set after each epoch
  int trace_steps = 0;   // record the timeline of the first steps of epoch 0
  // The last worker starts every step this much later, waiting on its
  // rank's clock (virtual time on the simulator): a straggler.
  double straggler_ms = 0;
  // false: every step skips the exchange, as under torch's no_sync (each
  // worker steps on its own gradient): the no-sync baseline whose step
  // time, set against a synchronised run's, gives the share of the step
  // that synchronising costs.
  bool synchronise = true;
  // The ZeRO stage: 0 replicates gradients and optimizer state (DDP); 2
  // reduce-scatters each bucket so that every worker keeps and steps only
  // its shard, then all-gathers the updated parameters
  // (train/sharded_optimizer.h); 3 also shards the parameters, gathering
  // each layer before its forward and its backward
  // (train/sharded_params.h). Needs a scheme that provides reduce_scatter
  // and all_gather.
  int zero = 0;
  // ZeRO-3: consecutive layers wrapped into units of at least this many
  // bytes, each gathered and reduce-scattered whole (FSDP's size-based
  // auto-wrap); 0: one unit per layer.
  std::size_t unit_bytes = 0;
  // false: worker 0's final parameters are not copied into the result
  // (only their hash is), so a run holds no second copy of the model.
  bool keep_params = true;
};

// A loss or an accuracy that was not computed is absent, never 0: an
// emulated model (a profile) times its compute and computes no loss, and
// a run that does not evaluate scores no test set.
struct EpochRecord {
  int epoch = 0;
  std::optional<double> train_loss;  // mean over worker 0's micro-batches
  std::optional<double> test_loss;
  std::optional<double> test_accuracy;
  double train_seconds = 0;  // cumulative, without evaluation time
};

// Per optimizer step, averaged over workers and steps.
struct StepTimes {
  double iteration = 0;
  double compute = 0;  // forward, backward and optimizer on the worker thread
  double comm = 0;     // bucket exchanges on the communication thread
  double exposed = 0;  // waiting for communication after backward
};

// Bytes one worker put on and took off the wire per optimizer step, mean
// over the workers.
struct StepTraffic {
  double sent = 0;
  double received = 0;
};

// One bucket's exchange within a step, in seconds from the step's start,
// mean over steps and workers.
struct BucketSpan {
  std::size_t bytes = 0;  // as exchanged (after compression)
  double start = 0;
  double end = 0;
};

struct TrainResult {
  std::size_t param_count = 0;
  std::size_t buckets = 0;
  long steps = 0;  // optimizer steps taken by each worker
  std::vector<EpochRecord> epochs;
  StepTimes mean;
  double samples_per_second = 0;
  std::vector<float> params;  // worker 0's final parameters
  std::uint64_t params_hash = 0;  // FNV-1a of their bytes: compares runs across processes
  bool replicas_agree = false;  // every worker ended bit-identical to worker 0 (same hash)
  // false: the ranks carried sizes only (an emulated model on the
  // simulator), so replicas_agree compares nothing and is not reported.
  bool payloads = true;
  // Per worker (worker 0's, the largest shard): the optimizer's state, and
  // the reduced gradients it keeps after the exchange (ZeRO-2 and 3: its
  // shard); the most bytes of parameters and of gradients it held at once
  // (replicated and ZeRO-2: the whole model each; ZeRO-3: its shards and
  // the layers gathered or awaiting their reduce-scatter); and the most
  // of both held at once.
  double optimizer_state_bytes = 0;
  double reduced_gradient_bytes = 0;
  double parameter_bytes = 0;
  double gradient_bytes = 0;
  double held_bytes = 0;
  // The largest peak resident size of a worker's process during the run
  // (common/peak_memory.h): per worker when each is a process of its own;
  // 0 when unknown.
  double peak_resident_bytes = 0;
  int zero = 0;  // the ZeRO stage it ran with
  bool synchronised = true;  // false: a no-sync baseline, whose replicas diverge by design
  // Counted by the transport (Comm::traffic) over the steps, the initial
  // broadcast and the result gathers left out; nullopt: not counted.
  std::optional<StepTraffic> wire;
  // What the scheme declares (Scheme::expected_traffic) for the step's
  // exchanges; nullopt where the exchange declares nothing.
  std::optional<StepTraffic> declared;
  std::vector<BucketSpan> bucket_spans;  // in bucket (launch) order
};

using EpochCallback = std::function<void(const EpochRecord&)>;

// The model-independent loop. Every worker builds its own model with
// `make_model`; samples indexes a data set of `samples` items; `evaluate`
// (optional) scores worker 0's parameters after each epoch, reading them
// through exactly `evaluation_passes` passes (under ZeRO-3 every worker
// gathers the model for each, a group at a time). Models whose compute is
// emulated (Model::emulated) skip the optimizer step.
struct ModelSource {
  std::function<std::unique_ptr<Model>()> make_model;
  std::size_t samples = 0;
  std::function<Evaluation(const ParamPass&)> evaluate;
  std::size_t evaluation_passes = 0;
  // false for an emulated model: its forward passes return no loss.
  bool computes_loss = true;
};

// The MLP of `config.layers` on `train`, scored on `test` when the
// configuration evaluates and `test` has samples.
ModelSource mlp_source(const TrainConfig& config, std::shared_ptr<const Dataset> train,
                       std::shared_ptr<const Dataset> test);

// Worker 0's record of an epoch of `batches` micro-batches whose losses
// summed to `loss_sum`, with the test set scored on the values `pass`
// reads when the configuration and the source allow it.
EpochRecord epoch_record(int epoch, double loss_sum, long batches, double train_seconds,
                         const TrainConfig& config, const ModelSource& source,
                         const ParamPass& pass);

// The no-sync baseline of `config`: the same steps with the exchange
// skipped. Nothing is evaluated or traced: its replicas diverge, and only
// its step time is wanted. Reports name it kNoSyncRun.
TrainConfig no_sync_baseline(TrainConfig config);
inline constexpr const char* kNoSyncRun = "no_sync";

// Whether a run's ranks carry sizes only (phantom payloads): an emulated
// model's on the simulator, whose values mean nothing; they then hold no
// parameter or gradient buffers.
inline bool carries_sizes_only(const std::string& transport, bool emulated) {
  return transport == "sim" && emulated;
}

// Throws ConfigError ("zero") for a ZeRO stage gradex does not run.
void check_zero_stage(int zero);
// Throws ConfigError naming `field` when ZeRO stage `zero` shards and
// `scheme` (named `name`) cannot shard (shards_training): it lacks
// reduce_scatter or all_gather.
void check_zero(int zero, const Scheme& scheme, const std::string& name,
                const std::string& field);
// Every exchange a run's workers post that a PS's dedicated servers take
// part in, in the workers' order (the initial broadcast is the workers'
// alone): each synchronised step's (under ZeRO-3 the passes' gathers with
// the reduce-scatters among them, zero3_pass_exchanges), and under ZeRO-3
// with values the gathers of the whole model that score it after each
// epoch and return the final parameters. Kept as one step's list, not the
// run's: a long run would repeat it thousands of times.
struct ServedRun {
  std::vector<ExchangeCall> step;   // one synchronised step's
  std::vector<ExchangeCall> whole;  // ZeRO-3 with values: the model gathered
  int epochs = 0;
  long steps_per_epoch = 0;
  // How many times the whole model is gathered to score it after each
  // epoch (scoring_passes).
  std::size_t scoring_passes = 0;
  // Every call of the run, in order.
  void for_each(const std::function<void(const ExchangeCall&)>& visit) const;
};
// The passes over the values that scoring the model after each epoch
// takes (ModelSource::evaluation_passes), 0 when nothing is scored.
std::size_t scoring_passes(const TrainConfig& config, const ModelSource& source);
// `probe` is a model of the run's.
ServedRun served_exchanges(const TrainConfig& config, const Model& probe, long steps_per_epoch,
                           bool phantom, std::size_t scoring_passes);
// A run's name in reports: the scheme's, marked when sharded.
std::string run_label(const std::string& scheme, const TrainConfig& config);

// Optimizer steps each worker takes per epoch. Throws ConfigError when the
// data set gives no full step (or the configuration is invalid), so callers
// can check before any rank starts.
long training_steps_per_epoch(const TrainConfig& config, std::size_t samples, int workers);

// One endpoint's share of the loop over `comm` (comm.size() ==
// exchange.endpoints()): workers train, dedicated servers replay the
// workers' exchanges. Rank 0 returns the run's result, with the other
// workers' step times and parameter hashes gathered over `comm` (so the
// result is the same whether ranks are threads or processes); the others
// return what they alone know. `trace` collects this process's ranks.
// Under ZeRO-2 the exchange must provide reduce_scatter and all_gather
// (check_zero first).
TrainResult train_rank(Comm& comm, GradientExchange& exchange, const TrainConfig& config,
                       const ModelSource& source, Trace* trace = nullptr,
                       const EpochCallback& on_epoch = {});

// train_rank on every rank of a World of `transport` made in this process
// (transport/world.h): threads, or threads holding loopback endpoints.
TrainResult train_data_parallel(const std::string& scheme, const SchemeOptions& options,
                                const TrainConfig& config, const ModelSource& source,
                                const std::string& transport = "inproc",
                                const TransportOptions& transport_options = {},
                                Trace* trace = nullptr, const EpochCallback& on_epoch = {});

// Trains an MLP on `train` with `scheme` over `options.workers` workers.
// `test` may be empty (then nothing is evaluated).
TrainResult train_data_parallel(const std::string& scheme, const SchemeOptions& options,
                                const TrainConfig& config, const Dataset& train,
                                const Dataset& test, const TransportOptions& transport = {},
                                Trace* trace = nullptr, const EpochCallback& on_epoch = {});

}  // namespace gradex
