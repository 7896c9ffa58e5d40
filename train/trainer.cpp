#include "train/trainer.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>

#include "common/cancel.h"
#include "common/straggler.h"
#include "common/errors.h"
#include "schemes/registry.h"
#include "train/blas.h"
#include "train/dataset.h"
#include "train/mlp.h"
#include "train/param_buffer.h"
#include "common/peak_memory.h"
#include "train/reducer.h"
#include "train/sharded_optimizer.h"
#include "train/sharded_params.h"
#include "train/step_accounting.h"
#include "transport/world.h"

namespace gradex {

namespace {

void check(const TrainConfig& c, int workers) {
  if (workers < 1) throw ConfigError("workers", "need at least one worker");
  if (c.batch < 1) throw ConfigError("batch", "must be at least 1");
  if (c.accumulate < 1) throw ConfigError("accumulate", "must be at least 1");
  if (c.epochs < 1) throw ConfigError("epochs", "must be at least 1");
  check_zero_stage(c.zero);
}

// The buckets a step exchanges: DDP's, or under ZeRO-3 one per unit.
std::vector<Bucket> step_buckets(const Model& model, const TrainConfig& c) {
  if (c.zero == 3) return unit_buckets(wrap_units(model.units(), c.unit_bytes));
  return make_buckets(model.params(), c.bucket_bytes, c.first_bucket_bytes);
}

// What one synchronised step exchanges, in the order the workers post
// them: an average per bucket, or sharded a reduce-scatter per bucket and
// then an all-gather per bucket of the parameters (ZeRO-2); under ZeRO-3
// each pass's gathers with the last pass's reduce-scatters among them
// (zero3_pass_exchanges). A PS's dedicated servers replay this list.
std::vector<ExchangeCall> step_exchanges(const std::vector<Bucket>& buckets,
                                         const TrainConfig& c) {
  std::vector<ExchangeCall> calls;
  if (c.zero == 3) {
    for (int k = 0; k < c.accumulate; ++k) {
      const auto pass =
          zero3_pass_exchanges(buckets, k + 1 == c.accumulate, c.overlap, c.compression);
      calls.insert(calls.end(), pass.begin(), pass.end());
    }
    return calls;
  }
  for (const Bucket& b : buckets) {
    calls.push_back(average_call(
        b.count, c.compression, c.zero > 0 ? Collective::reduce_scatter : Collective::all_reduce));
  }
  if (c.zero == 2) {
    for (const Bucket& b : buckets) {
      calls.push_back({b.count, DType::f32, ReduceOp::sum, Collective::all_gather});
    }
  }
  return calls;
}

constexpr std::uint64_t kFnvOffset = 14695981039346656037ull;

// FNV-1a of the values' bytes, continuing from `h` (so a vector can be
// hashed piece by piece).
std::uint64_t fnv1a(std::span<const float> values, std::uint64_t h = kFnvOffset) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(values.data());
  for (std::size_t i = 0; i < values.size_bytes(); ++i) {
    h ^= bytes[i];
    h *= 1099511628211ull;
  }
  return h;
}

// What one worker knows at the end of its loop.
struct WorkerOutcome {
  StepTimes sum;  // summed over its steps
  std::vector<float> params;  // when the configuration keeps them
  std::uint64_t params_hash = 0;
  std::vector<EpochRecord> epochs;  // worker 0 only
  double optimizer_state_bytes = 0;
  double reduced_gradient_bytes = 0;
  double parameter_bytes = 0;
  double gradient_bytes = 0;
  double held_bytes = 0;
  Traffic traffic;  // over the steps only
  // Per bucket, its exchange's start and end from the step's start, summed
  // over the steps.
  std::vector<std::pair<double, double>> bucket_sums;
};


WorkerOutcome run_worker(Comm& comm, GradientExchange& exchange, const TrainConfig& config,
                         const ModelSource& source, long steps, Trace* trace,
                         const EpochCallback& on_epoch) {
  const int rank = comm.rank();
  const int workers = exchange.workers();
  const auto model_ptr = source.make_model();
  Model& model = *model_ptr;
  const std::size_t param_count = model.param_count();
  WorkerOutcome out;
  // Sizes only (an emulated model on the simulator): no buffers at all,
  // so thousands of ranks fit; the exchanges move phantom tensors.
  const bool phantom = comm.phantom_payloads();
  GRADEX_ENFORCE(!phantom || model.emulated(), "a model that learns needs its values");
  const bool sync = config.synchronise;
  const bool sharded = sync && config.zero == 2;
  // ZeRO-3: no whole vectors at all; the store holds this worker's shards.
  std::optional<ShardedParams> store;
  if (sync && config.zero == 3) {
    store.emplace(model.units(), config.unit_bytes, rank, workers, phantom);
  }
  const bool whole = !phantom && !store;
  ParamBuffer params(whole ? param_count : 0), grads(whole ? param_count : 0);
  std::vector<Bucket> buckets = step_buckets(model, config);
  // The gradients this worker keeps reduced and the parameters it steps.
  const std::vector<ParamRange> kept =
      store     ? std::vector<ParamRange>{{0, store->shard_elements()}}
      : sharded ? zero_shard(buckets, rank, workers)
                : std::vector<ParamRange>{{0, param_count}};
  ShardedOptimizer optimizer(config.optimizer, model.emulated() ? std::vector<ParamRange>{} : kept);
  // Compute's time on this rank's clock (measured and charged on the
  // simulator's virtual clock).
  RankTime time(comm.clock());
  model.pace_with(time);
  // The Reducer's communication thread is the only user of `comm` until it
  // is destroyed at the end of this function.
  ReducerOptions reducer_options;
  reducer_options.compression = config.compression;
  reducer_options.overlap = config.overlap;
  reducer_options.trace = trace;
  reducer_options.compute = &time;
  reducer_options.shard = sharded;
  if (store) reducer_options = store->reducer_options(reducer_options);
  Reducer reducer(comm, exchange, grads, std::move(buckets), model.params(), reducer_options);
  const auto broadcast = [&](Tensor t) {
    reducer.run([&] { broadcast_from_worker0(exchange, comm, t); });
  };
  if (store) {
    store->attach(reducer);
    // Worker 0's initial values, as a replicated run starts from them.
    store->scatter_from_worker0(
        [&](std::size_t u, std::span<float> values) { model.init_unit(u, values, config.seed); },
        broadcast);
  } else {
    // Every worker initialises differently; the broadcast makes them agree.
    model.init(params, config.seed + static_cast<std::uint64_t>(rank) * 7919);
    broadcast(Tensor{phantom ? nullptr : params.data(), param_count, DType::f32});
  }
  FlatAccess flat(params, grads, model.units());
  LayerAccess& access = store ? static_cast<LayerAccess&>(*store) : flat;
  // Every worker's values whole, unit by unit (ZeRO-3 gathers them: every
  // worker takes part); `keep` says whether to copy them into `into`.
  std::uint64_t hash = 0;
  const auto whole_params = [&](std::vector<float>& into, bool keep) {
    hash = kFnvOffset;
    if (!store || phantom) {
      if (keep) into.assign(params.begin(), params.end());
      hash = fnv1a(params, hash);
      return;
    }
    if (keep) into.assign(param_count, 0.0f);
    store->for_each_gathered([&](std::size_t offset, std::span<const float> values) {
      hash = fnv1a(values, hash);
      if (keep) std::copy(values.begin(), values.end(), into.begin() + static_cast<std::ptrdiff_t>(offset));
    });
  };
  // The broadcast is not a step's traffic, nor are the evaluation's
  // gathers. The communication thread is idle between steps, and each
  // finish() orders its counts before ours.
  Traffic steps_traffic;
  out.bucket_sums.resize(reducer.buckets().size());

  const float scale = 1.0f / static_cast<float>(config.accumulate);
  const std::size_t micro = static_cast<std::size_t>(config.batch);
  StepTimes& sum = out.sum;
  double train_seconds = 0;
  auto record = [&](const char* name, double t0, double t1) {
    if (trace != nullptr) trace->add({name, rank, 0, t0, t1 - t0});
  };
  for (int epoch = 0; epoch < config.epochs; ++epoch) {
    const auto shard = shard_indices(source.samples, rank, workers, config.seed, epoch);
    double loss_sum = 0;
    for (long s = 0; s < steps; ++s) {
      // Between steps the reducer is idle: a cancelled run stops here and
      // its abort wakes the other ranks.
      throw_if_cancelled();
      const bool tracing = trace != nullptr && epoch == 0 && s < config.trace_steps;
      reducer.set_tracing(tracing);
      const Traffic step_start = comm.traffic();
      const double t_start = comm.clock().now();
      straggle(comm, workers, config.straggler_ms);
      std::fill(grads.begin(), grads.end(), 0.0f);
      if (sync) reducer.begin_step();
      if (store) store->begin_step();
      double compute = 0, exposed = 0;
      for (int k = 0; k < config.accumulate; ++k) {
        const std::size_t first = (static_cast<std::size_t>(s) * config.accumulate + k) * micro;
        const std::span<const std::size_t> batch(shard.data() + first, micro);
        // Only the last micro-batch's backward triggers communication, and
        // none in the no-sync baseline.
        const bool last = sync && k + 1 == config.accumulate;
        if (last) reducer.prepare();
        if (store) store->begin_pass();
        const double t0 = time.begin();
        double tb = t0;
        loss_sum += model.train_step(
            access, batch, scale,
            last ? GradReady([&](std::size_t p) { reducer.mark_ready(p); }) : GradReady(),
            [&] { tb = t0 + time.elapsed(); });
        // The last stretch ends in reducer.finish(), which on a virtual
        // clock replays the buckets' exchanges against it.
        // ZeRO-3's waits for gathered layers, inside the pass, are left
        // out of it (RankTime::exclude) and count as exposed.
        const double computed = time.elapsed();
        const double t1 = last ? t0 + computed : time.end();
        compute += computed;
        if (store) exposed += store->take_wait_seconds();
        if (tracing) {
          record("forward", t0, tb);
          record(last ? "backward" : "backward (no_sync)", tb, t1);
        }
      }
      if (sync) exposed += reducer.finish();
      const double t2 = time.begin();
      if (model.emulated()) {
        time.pass_until(0);  // no optimizer to run: charged nothing
      } else if (store) {
        optimizer.step(store->shard_params(), store->shard_grads());
      } else {
        optimizer.step(params, grads);
      }
      const double t3 = time.end();
      if (tracing) record("optimizer step", t2, t3);
      // Sharded, each worker stepped its blocks only: gather them all.
      if (sharded) exposed += reducer.gather(params);
      const double t_end = comm.clock().now();
      compute += t3 - t2;
      sum.iteration += t_end - t_start;
      sum.compute += compute;
      sum.exposed += exposed;
      steps_traffic += traffic_since(step_start, comm.traffic());
      if (sync) {
        sum.comm += reducer.comm_seconds();
        const auto times = reducer.bucket_times();
        for (std::size_t b = 0; b < times.size(); ++b) {
          out.bucket_sums[b].first += times[b].first - t_start;
          out.bucket_sums[b].second += times[b].second - t_start;
        }
      }
      train_seconds += t_end - t_start;
    }
    // Worker 0 scores the model. Under ZeRO-3 it reads the values a group
    // at a time as every worker gathers them, once per pass of the
    // evaluation, so that no worker holds the whole model: the others take
    // part in as many passes.
    const std::size_t gathered_passes = store && !phantom ? scoring_passes(config, source) : 0;
    std::size_t passes = 0;
    const ParamPass pass =
        gathered_passes > 0 ? ParamPass([&](const ParamRangeVisitor& visit) {
          ++passes;
          store->for_each_gathered(visit);
        })
                            : whole_vector_pass(params);
    if (rank == 0) {
      const EpochRecord rec = epoch_record(epoch, loss_sum, steps * config.accumulate,
                                           train_seconds, config, source, pass);
      if (on_epoch) on_epoch(rec);
      out.epochs.push_back(rec);
    } else {
      for (std::size_t i = 0; i < gathered_passes; ++i) pass([](std::size_t, std::span<const float>) {});
    }
    GRADEX_ENFORCE_EQ(passes, gathered_passes, "ZeRO-3 passes the evaluation took");
  }
  out.traffic = steps_traffic;
  whole_params(out.params, config.keep_params);
  out.params_hash = hash;
  out.optimizer_state_bytes = static_cast<double>(optimizer.state_bytes());
  out.reduced_gradient_bytes = static_cast<double>(range_elements(kept) * sizeof(float));
  const double whole_bytes = static_cast<double>(param_count * sizeof(float));
  out.parameter_bytes = store ? static_cast<double>(store->peak_param_bytes()) : whole_bytes;
  out.gradient_bytes = store ? static_cast<double>(store->peak_grad_bytes()) : whole_bytes;
  out.held_bytes = store ? static_cast<double>(store->peak_held_bytes()) : 2 * whole_bytes;
  return out;
}

}  // namespace

EpochRecord epoch_record(int epoch, double loss_sum, long batches, double train_seconds,
                         const TrainConfig& config, const ModelSource& source,
                         const ParamPass& pass) {
  EpochRecord rec;
  rec.epoch = epoch + 1;
  if (source.computes_loss) rec.train_loss = loss_sum / static_cast<double>(batches);
  rec.train_seconds = train_seconds;
  if (config.evaluate && source.evaluate) {
    const Evaluation e = source.evaluate(pass);
    rec.test_loss = e.loss;
    rec.test_accuracy = e.accuracy;
  }
  return rec;
}

ModelSource mlp_source(const TrainConfig& config, std::shared_ptr<const Dataset> train,
                       std::shared_ptr<const Dataset> test) {
  ModelSource s;
  const std::vector<int> layers = config.layers;
  // Here, before any rank runs: the ranks may be fibers on small stacks,
  // and opening the library runs its initialisation.
  open_blas();
  s.make_model = [train, layers] { return std::make_unique<Mlp>(layers, *train); };
  s.samples = train->size();
  if (config.evaluate && test && test->size() > 0) {
    auto scorer = std::make_shared<Mlp>(layers, *train);
    s.evaluate = [scorer, test](const ParamPass& pass) { return scorer->evaluate(pass, *test); };
    s.evaluation_passes = Mlp::evaluation_passes(test->size());
  }
  return s;
}

TrainConfig no_sync_baseline(TrainConfig config) {
  config.synchronise = false;
  config.evaluate = false;
  config.trace_steps = 0;
  // Each worker steps on its own whole gradient: nothing to shard.
  config.zero = 0;
  config.keep_params = false;
  return config;
}

void check_zero_stage(int zero) {
  if (zero != 0 && zero != 2 && zero != 3) {
    throw ConfigError("zero", "stage " + std::to_string(zero) +
                                  " is not run: 0 (replicated, DDP), 2 (ZeRO-2: gradients and "
                                  "optimizer state sharded) or 3 (ZeRO-3/FSDP: parameters too)");
  }
}

void check_zero(int zero, const Scheme& scheme, const std::string& name,
                const std::string& field) {
  if (zero == 0 || shards_training(scheme)) return;
  std::string missing;
  for (Collective c : {Collective::reduce_scatter, Collective::all_gather}) {
    if (scheme.provides(c)) continue;
    if (!missing.empty()) missing += " and ";
    missing += collective_name(c);
  }
  throw ConfigError(field, "ZeRO-" + std::to_string(zero) +
                               " needs a scheme that provides reduce_scatter and all_gather; '" +
                               name + "' provides no " + missing);
}

std::size_t scoring_passes(const TrainConfig& config, const ModelSource& source) {
  return config.evaluate && source.evaluate ? source.evaluation_passes : 0;
}

ServedRun served_exchanges(const TrainConfig& config, const Model& probe, long steps_per_epoch,
                           bool phantom, std::size_t scoring_passes) {
  ServedRun run;
  if (!config.synchronise) return run;
  const std::vector<Bucket> buckets = step_buckets(probe, config);
  run.step = step_exchanges(buckets, config);
  // ZeRO-3 with values: every group gathered, first to last
  // (ShardedParams::for_each_gathered).
  if (config.zero == 3 && !phantom) {
    for (auto b = buckets.rbegin(); b != buckets.rend(); ++b) {
      run.whole.push_back({b->count, DType::f32, ReduceOp::sum, Collective::all_gather});
    }
  }
  run.epochs = config.epochs;
  run.steps_per_epoch = steps_per_epoch;
  run.scoring_passes = scoring_passes;
  return run;
}

void ServedRun::for_each(const std::function<void(const ExchangeCall&)>& visit) const {
  for (int epoch = 0; epoch < epochs; ++epoch) {
    for (long s = 0; s < steps_per_epoch; ++s) {
      for (const ExchangeCall& c : step) visit(c);
    }
    for (std::size_t p = 0; p < scoring_passes; ++p) {
      for (const ExchangeCall& c : whole) visit(c);
    }
  }
  for (const ExchangeCall& c : whole) visit(c);
}

std::string run_label(const std::string& scheme, const TrainConfig& config) {
  return config.zero > 0 ? scheme + " zero-" + std::to_string(config.zero) : scheme;
}

long training_steps_per_epoch(const TrainConfig& c, std::size_t samples, int workers) {
  check(c, workers);
  const std::size_t shard = samples / static_cast<std::size_t>(workers);
  long steps = static_cast<long>(shard / (static_cast<std::size_t>(c.batch) * c.accumulate));
  if (c.max_steps >= 0) steps = std::min(steps, c.max_steps);
  if (steps < 1) {
    throw ConfigError("batch", "the training set (" + std::to_string(samples) +
                                   " samples) gives no full step per worker");
  }
  return steps;
}

TrainResult train_rank(Comm& comm, GradientExchange& exchange, const TrainConfig& config,
                       const ModelSource& source, Trace* trace, const EpochCallback& on_epoch) {
  GRADEX_ENFORCE_EQ(comm.size(), exchange.endpoints(), "training group size");
  const int workers = exchange.workers();
  const long steps = training_steps_per_epoch(config, source.samples, workers);
  // Callers name the scheme in their check_zero, before any rank starts.
  GRADEX_ENFORCE(config.zero == 0 || (exchange.provides(Collective::reduce_scatter) &&
                                      exchange.provides(Collective::all_gather)),
                 "ZeRO over an exchange without reduce_scatter and all_gather");
  TrainResult result;
  result.steps = steps * config.epochs;
  result.zero = config.synchronise ? config.zero : 0;
  const int rank = comm.rank();
  std::vector<Bucket> buckets;
  ServedRun served;
  {  // not held while the worker trains
    const auto probe = source.make_model();
    result.param_count = probe->param_count();
    buckets = step_buckets(*probe, config);
    if (rank >= workers) served = served_exchanges(config, *probe, steps, comm.phantom_payloads(),
                                                  scoring_passes(config, source));
  }
  result.buckets = buckets.size();
  if (rank >= workers) {
    // A dedicated server: the workers' exchanges, call for call.
    served.for_each([&](const ExchangeCall& c) { exchange.serve(comm, c); });
    return result;
  }
  const std::vector<ExchangeCall> step_calls = step_exchanges(buckets, config);
  // This run's peak, not an earlier run's in the same process.
  reset_peak_resident_bytes();
  WorkerOutcome own = run_worker(comm, exchange, config, source, steps, trace, on_epoch);
  const std::vector<std::uint64_t> mine = encode_worker(
      own.sum, own.params_hash, own.traffic, peak_resident_bytes(), own.bucket_sums);
  const std::size_t record_bytes = mine.size() * sizeof(std::uint64_t);
  result.synchronised = config.synchronise;
  result.payloads = !comm.phantom_payloads();
  result.params_hash = params_hash_word(mine);
  if (rank != 0) {
    comm.send(0, mine.data(), record_bytes, kTrainGatherTag);
    result.params = std::move(own.params);
    return result;
  }
  std::vector<std::vector<std::uint64_t>> all(static_cast<std::size_t>(workers), mine);
  std::vector<Request> pending;
  for (int p = 1; p < workers; ++p) {
    pending.push_back(comm.irecv(p, all[static_cast<std::size_t>(p)].data(), record_bytes,
                                 kTrainGatherTag));
  }
  comm.wait_all(pending);

  // What each bucket's own exchange moves.
  std::vector<std::size_t> bucket_bytes;
  for (const Bucket& b : buckets) {
    const ExchangeCall call = average_call(
        b.count, config.compression,
        config.zero > 0 ? Collective::reduce_scatter : Collective::all_reduce);
    bucket_bytes.push_back(call.count * dtype_size(call.dtype));
  }
  decode_workers(result, all, bucket_bytes, config.synchronise);
  if (config.synchronise) {
    result.declared = declared_step(exchange, step_calls);
  } else {
    result.declared = StepTraffic{};  // the exchange is skipped: nothing to move
  }
  if (result.mean.iteration > 0) {
    result.samples_per_second = static_cast<double>(workers) * config.batch *
                                config.accumulate / result.mean.iteration;
  }
  result.epochs = std::move(own.epochs);
  result.optimizer_state_bytes = own.optimizer_state_bytes;
  result.reduced_gradient_bytes = own.reduced_gradient_bytes;
  result.parameter_bytes = own.parameter_bytes;
  result.gradient_bytes = own.gradient_bytes;
  result.held_bytes = own.held_bytes;
  result.params = std::move(own.params);
  return result;
}

TrainResult train_data_parallel(const std::string& scheme_name, const SchemeOptions& options,
                                const TrainConfig& config, const Dataset& train,
                                const Dataset& test, const TransportOptions& transport,
                                Trace* trace, const EpochCallback& on_epoch) {
  return train_data_parallel(scheme_name, options, config,
                             mlp_source(config, borrowed(train), borrowed(test)), "inproc",
                             transport, trace, on_epoch);
}

TrainResult train_data_parallel(const std::string& scheme_name, const SchemeOptions& options,
                                const TrainConfig& config, const ModelSource& source,
                                const std::string& transport,
                                const TransportOptions& transport_options, Trace* trace,
                                const EpochCallback& on_epoch) {
  check(config, options.workers);
  std::unique_ptr<Scheme> scheme = make_scheme(scheme_name, options);
  check_zero(config.zero, *scheme, scheme_name, "zero");
  SchemeExchange exchange(std::move(scheme));
  // Bad input fails here, before any rank starts (or connects).
  training_steps_per_epoch(config, source.samples, exchange.workers());
  TrainResult result;
  // Training needs the values: the simulator carries real payloads, but
  // for an emulated model, whose values mean nothing (its gradients are
  // layer indices and no optimizer runs): its ranks carry sizes only, so
  // thousands fit in memory, and the replicas are not compared.
  TransportOptions world_options = transport_options;
  world_options.phantom_payloads = carries_sizes_only(transport, source.make_model()->emulated());
  const auto world = make_world(transport, exchange.endpoints(), world_options);
  world->run([&](Comm& comm) {
    TrainResult r = train_rank(comm, exchange, config, source, trace, on_epoch);
    if (comm.rank() == 0) result = std::move(r);
  });
  return result;
}

}  // namespace gradex
