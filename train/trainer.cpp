#include "train/trainer.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <memory>

#include "common/cancel.h"
#include "common/straggler.h"
#include "common/errors.h"
#include "schemes/registry.h"
#include "train/param_buffer.h"
#include "train/reducer.h"
#include "transport/world.h"

namespace gradex {

namespace {

void check(const TrainConfig& c, int workers) {
  if (workers < 1) throw ConfigError("workers", "need at least one worker");
  if (c.batch < 1) throw ConfigError("batch", "must be at least 1");
  if (c.accumulate < 1) throw ConfigError("accumulate", "must be at least 1");
  if (c.epochs < 1) throw ConfigError("epochs", "must be at least 1");
}

std::uint64_t fnv1a(std::span<const float> values) {
  std::uint64_t h = 14695981039346656037ull;
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
  std::vector<float> params;
  std::vector<EpochRecord> epochs;  // worker 0 only
  double optimizer_state_bytes = 0;
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
  ParamBuffer params(param_count), grads(param_count);
  // Every worker initialises differently; the broadcast makes them agree.
  model.init(params, config.seed + static_cast<std::uint64_t>(rank) * 7919);
  auto optimizer = make_optimizer(config.optimizer, model.emulated() ? 0 : param_count);
  // Compute's time on this rank's clock (measured and charged on the
  // simulator's virtual clock).
  RankTime time(comm.clock());
  // The Reducer's communication thread is the only user of `comm` until it
  // is destroyed at the end of this function.
  Reducer reducer(comm, exchange, grads, make_buckets(model.params(), config.bucket_bytes),
                  model.params(), {config.compression, config.overlap, trace, &time});
  reducer.run([&] { broadcast_from_worker0(exchange, comm, params); });

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
      const double t_start = comm.clock().now();
      straggle(comm, workers, config.straggler_ms);
      std::fill(grads.begin(), grads.end(), 0.0f);
      double compute = 0;
      for (int k = 0; k < config.accumulate; ++k) {
        const std::size_t first = (static_cast<std::size_t>(s) * config.accumulate + k) * micro;
        const std::span<const std::size_t> batch(shard.data() + first, micro);
        const bool last = k + 1 == config.accumulate;
        if (last) reducer.prepare();
        const double t0 = time.begin();
        double tb = t0;
        // Only the last micro-batch's backward triggers communication.
        loss_sum += model.train_step(
            params, batch, grads, scale,
            last ? GradReady([&](std::size_t p) { reducer.mark_ready(p); }) : GradReady(),
            [&] { tb = t0 + time.elapsed(); });
        // The last stretch ends in reducer.finish(), which on a virtual
        // clock replays the buckets' exchanges against it.
        const double t1 = last ? t0 + time.elapsed() : time.end();
        compute += t1 - t0;
        if (tracing) {
          record("forward", t0, tb);
          record(last ? "backward" : "backward (no_sync)", tb, t1);
        }
      }
      const double exposed = reducer.finish();
      const double t2 = time.begin();
      if (!model.emulated()) optimizer->step(params, grads);
      const double t3 = time.end();
      if (tracing) record("optimizer step", t2, t3);
      compute += t3 - t2;
      sum.iteration += t3 - t_start;
      sum.compute += compute;
      sum.exposed += exposed;
      sum.comm += reducer.comm_seconds();
      train_seconds += t3 - t_start;
    }
    if (rank == 0) {
      const EpochRecord rec = epoch_record(epoch, loss_sum, steps * config.accumulate,
                                           train_seconds, config, source, params);
      if (on_epoch) on_epoch(rec);
      out.epochs.push_back(rec);
    }
  }
  out.params.assign(params.begin(), params.end());
  out.optimizer_state_bytes = static_cast<double>(optimizer->state_bytes());
  return out;
}

// One worker's figures as 64-bit words, for the gather to rank 0.
std::vector<std::uint64_t> encode(const StepTimes& t, std::uint64_t hash) {
  return {std::bit_cast<std::uint64_t>(t.iteration), std::bit_cast<std::uint64_t>(t.compute),
          std::bit_cast<std::uint64_t>(t.comm), std::bit_cast<std::uint64_t>(t.exposed), hash};
}

}  // namespace

EpochRecord epoch_record(int epoch, double loss_sum, long batches, double train_seconds,
                         const TrainConfig& config, const ModelSource& source,
                         std::span<const float> params) {
  EpochRecord rec;
  rec.epoch = epoch + 1;
  rec.train_loss = loss_sum / static_cast<double>(batches);
  rec.train_seconds = train_seconds;
  if (config.evaluate && source.evaluate) {
    const Evaluation e = source.evaluate(params);
    rec.test_loss = e.loss;
    rec.test_accuracy = e.accuracy;
  }
  return rec;
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
  TrainResult result;
  result.steps = steps * config.epochs;
  std::vector<ExchangeCall> step_calls;  // what one synchronised step exchanges
  {
    const auto probe = source.make_model();
    result.param_count = probe->param_count();
    for (const Bucket& b : make_buckets(probe->params(), config.bucket_bytes)) {
      step_calls.push_back(average_call(b.count, config.compression));
    }
    result.buckets = step_calls.size();
  }
  const int rank = comm.rank();
  if (rank >= workers) {
    // A dedicated server: replay the workers' exchanges, call for call.
    serve_call(exchange, comm, broadcast_call(result.param_count));
    for (long s = 0; s < result.steps; ++s) {
      for (const ExchangeCall& c : step_calls) serve_call(exchange, comm, c);
    }
    return result;
  }
  WorkerOutcome own = run_worker(comm, exchange, config, source, steps, trace, on_epoch);
  const std::vector<std::uint64_t> mine = encode(own.sum, fnv1a(own.params));
  const std::size_t record_bytes = mine.size() * sizeof(std::uint64_t);
  if (rank != 0) {
    comm.send(0, mine.data(), record_bytes, kTrainGatherTag);
    result.params = std::move(own.params);
    result.params_hash = mine[4];
    return result;
  }
  std::vector<std::vector<std::uint64_t>> all(static_cast<std::size_t>(workers), mine);
  std::vector<Request> pending;
  for (int p = 1; p < workers; ++p) {
    pending.push_back(comm.irecv(p, all[static_cast<std::size_t>(p)].data(), record_bytes,
                                 kTrainGatherTag));
  }
  comm.wait_all(pending);

  const double n = static_cast<double>(workers) * static_cast<double>(result.steps);
  result.replicas_agree = true;
  for (const auto& rec : all) {
    result.mean.iteration += std::bit_cast<double>(rec[0]) / n;
    result.mean.compute += std::bit_cast<double>(rec[1]) / n;
    result.mean.comm += std::bit_cast<double>(rec[2]) / n;
    result.mean.exposed += std::bit_cast<double>(rec[3]) / n;
    if (rec[4] != mine[4]) result.replicas_agree = false;
  }
  if (result.mean.iteration > 0) {
    result.samples_per_second = static_cast<double>(workers) * config.batch *
                                config.accumulate / result.mean.iteration;
  }
  result.epochs = std::move(own.epochs);
  result.optimizer_state_bytes = own.optimizer_state_bytes;
  result.params = std::move(own.params);
  result.params_hash = mine[4];
  return result;
}

TrainResult train_data_parallel(const std::string& scheme_name, const SchemeOptions& options,
                                const TrainConfig& config, const Dataset& train,
                                const Dataset& test, const TransportOptions& transport,
                                Trace* trace, const EpochCallback& on_epoch) {
  ModelSource source;
  source.make_model = [&] { return std::make_unique<Mlp>(config.layers, train); };
  source.samples = train.size();
  if (config.evaluate && test.size() > 0) {
    auto shared = std::make_shared<Mlp>(config.layers, train);
    source.evaluate = [shared, &test](std::span<const float> p) { return shared->evaluate(p, test); };
  }
  return train_data_parallel(scheme_name, options, config, source, "inproc", transport, trace,
                             on_epoch);
}

TrainResult train_data_parallel(const std::string& scheme_name, const SchemeOptions& options,
                                const TrainConfig& config, const ModelSource& source,
                                const std::string& transport,
                                const TransportOptions& transport_options, Trace* trace,
                                const EpochCallback& on_epoch) {
  check(config, options.workers);
  SchemeExchange exchange(make_scheme(scheme_name, options));
  // Bad input fails here, before any rank starts (or connects).
  training_steps_per_epoch(config, source.samples, exchange.workers());
  TrainResult result;
  // Training needs the values: the simulator carries real payloads here.
  TransportOptions world_options = transport_options;
  world_options.phantom_payloads = false;
  const auto world = make_world(transport, exchange.endpoints(), world_options);
  world->run([&](Comm& comm) {
    TrainResult r = train_rank(comm, exchange, config, source, trace, on_epoch);
    if (comm.rank() == 0) result = std::move(r);
  });
  return result;
}

}  // namespace gradex
