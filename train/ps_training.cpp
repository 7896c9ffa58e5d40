#include "train/ps_training.h"

#include <algorithm>
#include <bit>
#include <memory>

#include "common/cancel.h"
#include "common/straggler.h"
#include "common/errors.h"
#include "ps/sharding.h"
#include "ps/worker.h"
#include "train/mlp.h"
#include "train/param_buffer.h"
#include "train/rank_time.h"
#include "train/step_accounting.h"
#include "transport/world.h"

namespace gradex {

namespace {

// What a worker reports to rank 0: its summed step times, then the bytes
// it sent and received over its steps.
constexpr std::size_t kWorkerWords = 6;
// What a server reports: the staleness histogram, sum, count and max, and
// its optimizer's state bytes.
constexpr std::size_t kServerWords = StalenessStats::kBins + 4;

ServerLayout layout_of(const PsTrainConfig& ps, int workers) {
  return ServerLayout(workers, ps.servers, ServerPlacement::dedicated);
}

std::vector<float> initial_params(const ModelSource& source, std::uint64_t seed) {
  const auto model = source.make_model();
  std::vector<float> params(model->param_count());
  model->init(params, seed);
  return params;
}

// A server: its shard of the initial parameters, the optimizer, then the
// serving loop; reports to rank 0.
void run_server(Comm& comm, const PsTrainConfig& ps, const TrainConfig& config,
                const ModelSource& source, int workers, long steps) {
  const int s = comm.rank() - workers;
  const std::vector<float> initial = initial_params(source, config.seed);
  const bool emulated = source.make_model()->emulated();
  const KeyRange range = layout_of(ps, workers).shard(initial.size(), s);
  ParamBuffer shard(initial.begin() + static_cast<std::ptrdiff_t>(range.offset),
                    initial.begin() + static_cast<std::ptrdiff_t>(range.offset + range.count));
  OptimizerConfig opt = config.optimizer;
  if (ps.consistency != Consistency::bsp) opt.lr /= static_cast<float>(workers);
  const auto optimizer = make_optimizer(opt, emulated ? 0 : shard.size());
  // The update is compute: charged to the server's clock on the simulator.
  RankTime time(comm.clock());
  const ApplyGradient apply = [&](std::span<float> params, std::span<const float> gradient) {
    time.begin();
    if (emulated) {
      time.pass_until(0);  // no optimizer to run: charged nothing
    } else {
      optimizer->step(params, gradient);
    }
    time.end();
  };
  TrainingServerPlan plan;
  plan.server = s;
  plan.workers = workers;
  plan.steps = steps;
  plan.consistency = ps.consistency;
  plan.staleness = ps.staleness;
  const StalenessStats stats = serve_training(comm, plan, shard, apply);

  std::vector<std::uint64_t> words(stats.histogram.begin(), stats.histogram.end());
  words.push_back(static_cast<std::uint64_t>(stats.sum));
  words.push_back(static_cast<std::uint64_t>(stats.count));
  words.push_back(static_cast<std::uint64_t>(stats.max));
  words.push_back(std::bit_cast<std::uint64_t>(static_cast<double>(optimizer->state_bytes())));
  comm.send(0, words.data(), words.size() * sizeof(std::uint64_t), kPsTrainGatherTag);
  comm.send(0, shard.data(), shard.size() * sizeof(float), kPsTrainGatherTag);
}

struct WorkerOutcome {
  StepTimes sum;
  std::vector<EpochRecord> epochs;  // worker 0 only
  Traffic traffic;  // over the steps, the initial pull left out
};

// A worker: pull, compute a gradient on its shard's next batch, push.
WorkerOutcome run_worker(Comm& comm, const PsTrainConfig& ps, const TrainConfig& config,
                         const ModelSource& source, int workers, long steps,
                         const EpochCallback& on_epoch) {
  const int rank = comm.rank();
  const auto model = source.make_model();
  const std::size_t count = model->param_count();
  ParamBuffer params(count), grads(count);
  const ServerLayout layout = layout_of(ps, workers);
  PsWorker server(comm, layout, 0);
  const Tensor params_t{params.data(), count, DType::f32};
  const Tensor grads_t{grads.data(), count, DType::f32};
  std::vector<Request> pulls = server.pull(params_t);
  server.wait(pulls);
  const Traffic before_steps = comm.traffic();
  RankTime time(comm.clock());
  model->pace_with(time);
  const long total = steps * config.epochs;
  const std::size_t batch_size = static_cast<std::size_t>(config.batch);
  WorkerOutcome out;
  double train_seconds = 0;
  long t = 0;
  for (int epoch = 0; epoch < config.epochs; ++epoch) {
    const auto shard = shard_indices(source.samples, rank, workers, config.seed, epoch);
    double loss_sum = 0;
    for (long s = 0; s < steps; ++s, ++t) {
      // A cancelled run stops between steps; the servers' waits see the
      // worker's failure and end too.
      throw_if_cancelled();
      const double t_start = comm.clock().now();
      straggle(comm, workers, config.straggler_ms);
      const double t0 = time.begin();
      std::fill(grads.begin(), grads.end(), 0.0f);
      const std::span<const std::size_t> batch(shard.data() + static_cast<std::size_t>(s) * batch_size,
                                               batch_size);
      loss_sum += model->train_step(params, batch, grads, 1.0f, {});
      const double t1 = time.end();
      std::vector<Request> pushes = server.push(grads_t);
      // The next pull lands in params, which this step no longer reads.
      if (t + 1 < total) pulls = server.pull(params_t);
      server.wait(pushes);
      server.wait(pulls);
      const double t2 = comm.clock().now();
      out.sum.compute += t1 - t0;
      out.sum.comm += t2 - t1;
      out.sum.exposed += t2 - t1;
      out.sum.iteration += t2 - t_start;
      train_seconds += t2 - t_start;
    }
    if (rank == 0) {
      // Worker 0's view: the parameters it last pulled.
      const EpochRecord rec =
          epoch_record(epoch, loss_sum, steps, train_seconds, config, source,
                       whole_vector_pass(params));
      if (on_epoch) on_epoch(rec);
      out.epochs.push_back(rec);
    }
  }
  out.traffic = traffic_since(before_steps, comm.traffic());
  return out;
}

long steps_per_epoch(const TrainConfig& config, std::size_t samples, int workers) {
  try {
    return training_steps_per_epoch(config, samples, workers);
  } catch (const ConfigError& e) {
    throw ConfigError(e.field(), e.reason() + " (PS training, " + std::to_string(workers) +
                                     " workers)");
  }
}

}  // namespace

void check_ps_training(const PsTrainConfig& ps, const TrainConfig& config, int workers,
                       std::size_t samples) {
  if (workers < 1) throw ConfigError("workers", "need at least one worker");
  if (ps.servers < 1) throw ConfigError("servers", "PS training needs at least one server");
  if (ps.staleness < 0) throw ConfigError("staleness", "must be >= 0");
  if (config.straggler_ms < 0) throw ConfigError("straggler_ms", "must be >= 0");
  if (config.accumulate != 1) throw ConfigError("accumulate", "PS training takes one batch a step");
  steps_per_epoch(config, samples, workers);
}

PsTrainResult ps_train_rank(Comm& comm, const PsTrainConfig& ps, const TrainConfig& config,
                            const ModelSource& source, int workers, const EpochCallback& on_epoch) {
  GRADEX_ENFORCE_EQ(comm.size(), workers + ps.servers, "PS training group size");
  const long steps = steps_per_epoch(config, source.samples, workers);
  const int rank = comm.rank();
  PsTrainResult result;
  if (rank >= workers) {
    run_server(comm, ps, config, source, workers, steps * config.epochs);
    return result;
  }
  WorkerOutcome own = run_worker(comm, ps, config, source, workers, steps, on_epoch);
  const std::vector<std::uint64_t> mine = {
      std::bit_cast<std::uint64_t>(own.sum.iteration), std::bit_cast<std::uint64_t>(own.sum.compute),
      std::bit_cast<std::uint64_t>(own.sum.comm), std::bit_cast<std::uint64_t>(own.sum.exposed),
      own.traffic.bytes_sent, own.traffic.bytes_received};
  if (rank != 0) {
    comm.send(0, mine.data(), kWorkerWords * sizeof(std::uint64_t), kPsTrainGatherTag);
    return result;
  }

  // Rank 0 gathers the workers' times, and the servers' figures and shards.
  TrainResult& train = result.train;
  train.steps = steps * config.epochs;
  const ServerLayout layout = layout_of(ps, workers);
  std::vector<std::vector<std::uint64_t>> times(static_cast<std::size_t>(workers), mine);
  std::vector<std::vector<std::uint64_t>> figures(static_cast<std::size_t>(ps.servers),
                                                  std::vector<std::uint64_t>(kServerWords));
  const std::size_t count = source.make_model()->param_count();
  std::vector<float> params(count);
  std::vector<Request> pending;
  for (int w = 1; w < workers; ++w) {
    pending.push_back(comm.irecv(w, times[static_cast<std::size_t>(w)].data(),
                                 kWorkerWords * sizeof(std::uint64_t), kPsTrainGatherTag));
  }
  for (int s = 0; s < ps.servers; ++s) {
    const KeyRange r = layout.shard(count, s);
    pending.push_back(comm.irecv(workers + s, figures[static_cast<std::size_t>(s)].data(),
                                 kServerWords * sizeof(std::uint64_t), kPsTrainGatherTag));
    pending.push_back(comm.irecv(workers + s, params.data() + r.offset, r.count * sizeof(float),
                                 kPsTrainGatherTag));
  }
  comm.wait_all(pending);

  const double n = static_cast<double>(workers) * static_cast<double>(train.steps);
  StepTraffic wire;  // the servers declare no per-step traffic: counted only
  for (const auto& w : times) {
    train.mean.iteration += std::bit_cast<double>(w[0]) / n;
    train.mean.compute += std::bit_cast<double>(w[1]) / n;
    train.mean.comm += std::bit_cast<double>(w[2]) / n;
    train.mean.exposed += std::bit_cast<double>(w[3]) / n;
    wire.sent += static_cast<double>(w[4]) / n;
    wire.received += static_cast<double>(w[5]) / n;
  }
  train.wire = wire;
  if (train.mean.iteration > 0) {
    train.samples_per_second = static_cast<double>(workers) * config.batch / train.mean.iteration;
  }
  for (const auto& f : figures) {
    StalenessStats s;
    for (std::size_t i = 0; i < StalenessStats::kBins; ++i) s.histogram[i] = static_cast<long>(f[i]);
    s.sum = static_cast<long>(f[StalenessStats::kBins]);
    s.count = static_cast<long>(f[StalenessStats::kBins + 1]);
    s.max = static_cast<long>(f[StalenessStats::kBins + 2]);
    result.staleness += s;
    train.optimizer_state_bytes += std::bit_cast<double>(f[StalenessStats::kBins + 3]);
  }
  if (source.evaluate) result.final_test_accuracy = source.evaluate(whole_vector_pass(params)).accuracy;
  train.param_count = count;
  train.epochs = std::move(own.epochs);
  train.replicas_agree = true;  // one copy: the servers'
  train.params = std::move(params);
  return result;
}

PsTrainResult train_parameter_server(const PsTrainConfig& ps, const TrainConfig& config,
                                     int workers, const ModelSource& source,
                                     const std::string& transport,
                                     const TransportOptions& transport_options,
                                     const EpochCallback& on_epoch) {
  // Bad input fails here, before any rank starts (or connects).
  check_ps_training(ps, config, workers, source.samples);
  // Training needs the values: the simulator carries real payloads here.
  TransportOptions options = transport_options;
  options.phantom_payloads = false;
  const auto world = make_world(transport, workers + ps.servers, options);
  PsTrainResult result;
  world->run([&](Comm& comm) {
    PsTrainResult r = ps_train_rank(comm, ps, config, source, workers, on_epoch);
    if (comm.rank() == 0) result = std::move(r);
  });
  return result;
}

PsTrainResult train_parameter_server(const PsTrainConfig& ps, const TrainConfig& config,
                                     int workers, const Dataset& train, const Dataset& test,
                                     const TransportOptions& transport,
                                     const EpochCallback& on_epoch) {
  return train_parameter_server(ps, config, workers,
                                mlp_source(config, borrowed(train), borrowed(test)), "inproc",
                                transport, on_epoch);
}

}  // namespace gradex
