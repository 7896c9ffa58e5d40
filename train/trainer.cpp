#include "train/trainer.h"

#include <algorithm>
#include <memory>
#include <mutex>

#include "common/errors.h"
#include "schemes/registry.h"
#include "train/reducer.h"

namespace gradex {

namespace {

void check(const TrainConfig& c, const SchemeOptions& o) {
  if (o.workers < 1) throw ConfigError("workers", "need at least one worker");
  if (c.batch < 1) throw ConfigError("batch", "must be at least 1");
  if (c.accumulate < 1) throw ConfigError("accumulate", "must be at least 1");
  if (c.epochs < 1) throw ConfigError("epochs", "must be at least 1");
}

long steps_per_epoch(const TrainConfig& c, std::size_t samples, int workers) {
  const std::size_t shard = samples / static_cast<std::size_t>(workers);
  long steps = static_cast<long>(shard / (static_cast<std::size_t>(c.batch) * c.accumulate));
  if (c.max_steps >= 0) steps = std::min(steps, c.max_steps);
  return steps;
}

}  // namespace

TrainResult train_data_parallel(const std::string& scheme_name, const SchemeOptions& options,
                                const TrainConfig& config, const Dataset& train,
                                const Dataset& test, const InprocOptions& transport,
                                Trace* trace, const EpochCallback& on_epoch) {
  ModelSource source;
  source.make_model = [&] { return std::make_unique<Mlp>(config.layers, train); };
  source.samples = train.size();
  if (config.evaluate && test.size() > 0) {
    auto shared = std::make_shared<Mlp>(config.layers, train);
    source.evaluate = [shared, &test](std::span<const float> p) { return shared->evaluate(p, test); };
  }
  return train_data_parallel(scheme_name, options, config, source, transport, trace, on_epoch);
}

TrainResult train_data_parallel(const std::string& scheme_name, const SchemeOptions& options,
                                const TrainConfig& config, const ModelSource& source,
                                const InprocOptions& transport, Trace* trace,
                                const EpochCallback& on_epoch) {
  check(config, options);
  SchemeExchange exchange(make_scheme(scheme_name, options));
  const int workers = exchange.workers();
  const long steps = steps_per_epoch(config, source.samples, workers);
  if (steps < 1) {
    throw ConfigError("batch", "the training set (" + std::to_string(source.samples) +
                                   " samples) gives no full step per worker");
  }

  TrainResult result;
  std::vector<std::vector<float>> finals(static_cast<std::size_t>(workers));
  std::vector<StepTimes> sums(static_cast<std::size_t>(workers));
  std::vector<ExchangeCall> step_calls;  // what one synchronised step exchanges
  std::size_t param_count = 0;
  {
    const auto probe = source.make_model();
    param_count = probe->param_count();
    for (const Bucket& b : make_buckets(probe->params(), config.bucket_bytes)) {
      step_calls.push_back(average_call(b.count, config.compression));
    }
    result.buckets = step_calls.size();
  }
  result.param_count = param_count;
  result.steps = steps * config.epochs;
  std::mutex merge;

  InprocWorld world(exchange.endpoints(), transport);
  run_ranks(world, [&](Comm& comm) {
    const int rank = comm.rank();
    if (rank >= workers) {
      // A dedicated server: replay the workers' exchanges, call for call.
      serve_call(exchange, comm, broadcast_call(param_count));
      for (long s = 0; s < steps * config.epochs; ++s) {
        for (const ExchangeCall& c : step_calls) serve_call(exchange, comm, c);
      }
      return;
    }
    const auto model_ptr = source.make_model();
    Model& model = *model_ptr;
    std::vector<float> params(param_count), grads(param_count);
    // Every worker initialises differently; the broadcast makes them agree.
    model.init(params, config.seed + static_cast<std::uint64_t>(rank) * 7919);
    auto optimizer = make_optimizer(config.optimizer, model.emulated() ? 0 : param_count);
    Reducer reducer(comm, exchange, grads, make_buckets(model.params(), config.bucket_bytes),
                    model.params(), {config.compression, config.overlap, trace});
    reducer.run([&] { broadcast_from_worker0(exchange, comm, params); });

    const float scale = 1.0f / static_cast<float>(config.accumulate);
    const std::size_t micro = static_cast<std::size_t>(config.batch);
    StepTimes sum;
    double train_seconds = 0;
    auto record = [&](const char* name, double t0, double t1) {
      if (trace != nullptr) trace->add({name, rank, 0, t0, t1 - t0});
    };
    for (int epoch = 0; epoch < config.epochs; ++epoch) {
      const auto shard = shard_indices(source.samples, rank, workers, config.seed, epoch);
      double loss_sum = 0;
      for (long s = 0; s < steps; ++s) {
        const bool tracing = trace != nullptr && epoch == 0 && s < config.trace_steps;
        reducer.set_tracing(tracing);
        const double t_start = comm.clock().now();
        std::fill(grads.begin(), grads.end(), 0.0f);
        double compute = 0;
        for (int k = 0; k < config.accumulate; ++k) {
          const std::size_t first = (static_cast<std::size_t>(s) * config.accumulate + k) * micro;
          const std::span<const std::size_t> batch(shard.data() + first, micro);
          const bool last = k + 1 == config.accumulate;
          if (last) reducer.prepare();
          const double t0 = comm.clock().now();
          double tb = t0;
          // Only the last micro-batch's backward triggers communication.
          loss_sum += model.train_step(
              params, batch, grads, scale,
              last ? GradReady([&](std::size_t p) { reducer.mark_ready(p); }) : GradReady(),
              [&] { tb = comm.clock().now(); });
          const double t1 = comm.clock().now();
          compute += t1 - t0;
          if (tracing) {
            record("forward", t0, tb);
            record(last ? "backward" : "backward (no_sync)", tb, t1);
          }
        }
        const double exposed = reducer.finish();
        const double t2 = comm.clock().now();
        if (!model.emulated()) optimizer->step(params, grads);
        const double t3 = comm.clock().now();
        if (tracing) record("optimizer step", t2, t3);
        compute += t3 - t2;
        sum.iteration += t3 - t_start;
        sum.compute += compute;
        sum.exposed += exposed;
        sum.comm += reducer.comm_seconds();
        train_seconds += t3 - t_start;
      }
      if (rank == 0) {
        EpochRecord rec;
        rec.epoch = epoch + 1;
        rec.train_loss = loss_sum / static_cast<double>(steps * config.accumulate);
        rec.train_seconds = train_seconds;
        if (config.evaluate && source.evaluate) {
          const Evaluation e = source.evaluate(params);
          rec.test_loss = e.loss;
          rec.test_accuracy = e.accuracy;
        }
        if (on_epoch) on_epoch(rec);
        std::lock_guard lock(merge);
        result.epochs.push_back(rec);
      }
    }
    std::lock_guard lock(merge);
    sums[static_cast<std::size_t>(rank)] = sum;
    finals[static_cast<std::size_t>(rank)] = std::move(params);
    if (rank == 0) result.optimizer_state_bytes = static_cast<double>(optimizer->state_bytes());
  });

  const double n = static_cast<double>(workers) * static_cast<double>(result.steps);
  for (const StepTimes& s : sums) {
    result.mean.iteration += s.iteration / n;
    result.mean.compute += s.compute / n;
    result.mean.comm += s.comm / n;
    result.mean.exposed += s.exposed / n;
  }
  if (result.mean.iteration > 0) {
    result.samples_per_second = static_cast<double>(workers) * config.batch *
                                config.accumulate / result.mean.iteration;
  }
  result.replicas_agree = std::all_of(finals.begin(), finals.end(),
                                      [&](const std::vector<float>& f) { return f == finals[0]; });
  result.params = std::move(finals[0]);
  return result;
}

}  // namespace gradex
