#include "train/ps_training.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "common/cancel.h"
#include "common/errors.h"
#include "ps/sharding.h"
#include "train/mlp.h"
#include "train/optimizer.h"

namespace gradex {

Consistency parse_consistency(const std::string& text, const std::string& field) {
  if (text == "bsp") return Consistency::bsp;
  if (text == "asp") return Consistency::asp;
  if (text == "ssp") return Consistency::ssp;
  throw ConfigError(field, "unknown consistency model '" + text + "' (known: bsp, asp, ssp)");
}

std::string consistency_name(Consistency c) {
  switch (c) {
    case Consistency::bsp: return "bsp";
    case Consistency::asp: return "asp";
    case Consistency::ssp: return "ssp";
  }
  return "?";
}

namespace {

constexpr Tag kPushTag = 1;
constexpr Tag kPullTag = 2;
constexpr std::size_t kHistogramBins = 16;

// One parameter shard and everything its handlers share.
struct Shard {
  KeyRange range;
  std::vector<float> params;
  std::vector<float> accumulated;  // BSP: the sum of this round's pushes
  std::unique_ptr<Optimizer> optimizer;
  std::mutex mutex;
  std::condition_variable changed;
  int arrived = 0;      // BSP: pushes of the current round
  long round = 0;       // BSP: rounds applied
  long version = 0;     // updates applied (BSP: rounds, else pushes)
  std::vector<long> clock;       // per worker: steps pushed
  std::vector<long> seen;        // per worker: version its last pull returned
  std::vector<long> histogram = std::vector<long>(kHistogramBins, 0);
  long staleness_sum = 0, staleness_count = 0, staleness_max = 0;
};

// Waits on the shard's condition with the transport's timeout, failing fast
// if another rank already failed.
template <typename Pred>
void wait_for(std::unique_lock<std::mutex>& lock, Shard& shard, InprocWorld& world,
              std::chrono::milliseconds timeout, int rank, Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (world.failed_rank() >= 0) {
      throw PeerLostError(world.failed_rank(), "server handler " + std::to_string(rank) +
                                                   ": a peer failed while waiting for workers");
    }
    if (std::chrono::steady_clock::now() > deadline) {
      throw TimeoutError("server handler " + std::to_string(rank) +
                         ": workers did not catch up within the timeout");
    }
    shard.changed.wait_for(lock, std::chrono::milliseconds(50));
  }
}

}  // namespace

PsTrainResult train_parameter_server(const PsTrainConfig& ps, const TrainConfig& config,
                                     int workers, const Dataset& train, const Dataset& test,
                                     const TransportOptions& transport,
                                     const EpochCallback& on_epoch) {
  if (workers < 1) throw ConfigError("workers", "need at least one worker");
  if (ps.servers < 1) throw ConfigError("servers", "need at least one server");
  if (ps.staleness < 0) throw ConfigError("staleness", "must be >= 0");
  if (config.accumulate != 1) throw ConfigError("accumulate", "PS training takes one batch a step");
  Mlp probe(config.layers, train);
  const std::size_t count = probe.param_count();
  const std::size_t shard_samples = train.size() / static_cast<std::size_t>(workers);
  long steps = static_cast<long>(shard_samples / static_cast<std::size_t>(config.batch));
  if (config.max_steps >= 0) steps = std::min(steps, config.max_steps);
  if (steps < 1) throw ConfigError("batch", "the training set gives no full step per worker");

  // The servers start from one initialisation (what a broadcast gives DDP).
  std::vector<float> initial(count);
  probe.init(initial, config.seed);
  OptimizerConfig opt = config.optimizer;
  if (ps.consistency != Consistency::bsp) opt.lr /= static_cast<float>(workers);
  std::vector<std::unique_ptr<Shard>> shards;
  for (int s = 0; s < ps.servers; ++s) {
    auto sh = std::make_unique<Shard>();
    sh->range = shard_range(count, ps.servers, s);
    sh->params.assign(initial.begin() + static_cast<std::ptrdiff_t>(sh->range.offset),
                      initial.begin() + static_cast<std::ptrdiff_t>(sh->range.offset +
                                                                    sh->range.count));
    sh->accumulated.assign(sh->range.count, 0.0f);
    sh->optimizer = make_optimizer(opt, sh->range.count);
    sh->clock.assign(static_cast<std::size_t>(workers), 0);
    sh->seen.assign(static_cast<std::size_t>(workers), 0);
    shards.push_back(std::move(sh));
  }
  // Endpoint of the handler of server s for worker w.
  auto handler = [&](int s, int w) { return workers + s * workers + w; };
  const long total_steps = steps * config.epochs;

  PsTrainResult result;
  result.train.param_count = count;
  result.train.steps = total_steps;
  std::vector<StepTimes> sums(static_cast<std::size_t>(workers));
  std::mutex merge;
  InprocWorld world(workers + ps.servers * workers, transport);

  run_ranks(world, [&](Comm& comm) {
    const int rank = comm.rank();
    if (rank >= workers) {
      const int s = (rank - workers) / workers;
      const int w = (rank - workers) % workers;
      Shard& sh = *shards[static_cast<std::size_t>(s)];
      const std::size_t n = sh.range.count;
      std::vector<float> grad(n), reply(n);
      auto send_params = [&] {
        {
          std::lock_guard lock(sh.mutex);
          std::copy(sh.params.begin(), sh.params.end(), reply.begin());
          sh.seen[static_cast<std::size_t>(w)] = sh.version;
        }
        comm.send(w, reply.data(), n * sizeof(float), kPullTag);
      };
      send_params();  // the worker's initial pull
      for (long t = 0; t < total_steps; ++t) {
        comm.recv(w, grad.data(), n * sizeof(float), kPushTag);
        std::unique_lock lock(sh.mutex);
        const long stale = sh.version - sh.seen[static_cast<std::size_t>(w)];
        sh.histogram[std::min<std::size_t>(static_cast<std::size_t>(stale), kHistogramBins - 1)]++;
        sh.staleness_sum += stale;
        sh.staleness_count += 1;
        sh.staleness_max = std::max(sh.staleness_max, stale);
        if (ps.consistency == Consistency::bsp) {
          for (std::size_t i = 0; i < n; ++i) sh.accumulated[i] += grad[i];
          if (++sh.arrived == workers) {
            // The last push of the round: average and step once.
            for (float& g : sh.accumulated) g /= static_cast<float>(workers);
            sh.optimizer->step(sh.params, sh.accumulated);
            std::fill(sh.accumulated.begin(), sh.accumulated.end(), 0.0f);
            sh.arrived = 0;
            ++sh.round;
            ++sh.version;
            sh.changed.notify_all();
          }
          wait_for(lock, sh, world, comm.timeout(), rank, [&] { return sh.round > t; });
        } else {
          sh.optimizer->step(sh.params, grad);
          ++sh.version;
          sh.clock[static_cast<std::size_t>(w)] = t + 1;
          sh.changed.notify_all();
          if (ps.consistency == Consistency::ssp) {
            // The reply lets the worker start step t+1; that is allowed once
            // every worker has pushed step t+1-s.
            wait_for(lock, sh, world, comm.timeout(), rank, [&] {
              return *std::min_element(sh.clock.begin(), sh.clock.end()) >= t + 1 - ps.staleness;
            });
          }
        }
        lock.unlock();
        if (t + 1 < total_steps) send_params();
      }
      return;
    }

    // A worker: pull, compute a gradient on its shard's next batch, push.
    Mlp model(config.layers, train);
    std::vector<float> params(count), grads(count);
    std::vector<Request> reqs;
    auto post_pulls = [&] {
      for (int s = 0; s < ps.servers; ++s) {
        const KeyRange r = shards[static_cast<std::size_t>(s)]->range;
        reqs.push_back(comm.irecv(handler(s, rank), params.data() + r.offset,
                                  r.count * sizeof(float), kPullTag));
      }
    };
    post_pulls();
    comm.wait_all(reqs);
    reqs.clear();
    StepTimes sum;
    double train_seconds = 0;
    long t = 0;
    for (int epoch = 0; epoch < config.epochs; ++epoch) {
      const auto shard = shard_indices(train.size(), rank, workers, config.seed, epoch);
      double loss_sum = 0;
      for (long s = 0; s < steps; ++s, ++t) {
        // A cancelled run stops between steps; the servers' waits see the
        // worker's failure and end too.
        throw_if_cancelled();
        const double t0 = comm.clock().now();
        std::fill(grads.begin(), grads.end(), 0.0f);
        const std::span<const std::size_t> batch(
            shard.data() + static_cast<std::size_t>(s) * static_cast<std::size_t>(config.batch),
            static_cast<std::size_t>(config.batch));
        loss_sum += model.train_step(params, batch, grads, 1.0f, {});
        if (rank == workers - 1 && ps.straggler_ms > 0) {
          std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ps.straggler_ms));
        }
        const double t1 = comm.clock().now();
        for (int sv = 0; sv < ps.servers; ++sv) {
          const KeyRange r = shards[static_cast<std::size_t>(sv)]->range;
          reqs.push_back(comm.isend(handler(sv, rank), grads.data() + r.offset,
                                    r.count * sizeof(float), kPushTag));
        }
        // The pull lands in params, which this step no longer reads.
        if (t + 1 < total_steps) post_pulls();
        comm.wait_all(reqs);
        reqs.clear();
        const double t2 = comm.clock().now();
        sum.compute += t1 - t0;
        sum.comm += t2 - t1;
        sum.exposed += t2 - t1;
        sum.iteration += t2 - t0;
        train_seconds += t2 - t0;
      }
      if (rank == 0) {
        EpochRecord rec;
        rec.epoch = epoch + 1;
        rec.train_loss = loss_sum / static_cast<double>(steps);
        rec.train_seconds = train_seconds;
        if (config.evaluate && test.size() > 0) {
          // Worker 0's view: the parameters it last pulled.
          const Evaluation e = model.evaluate(params, test);
          rec.test_loss = e.loss;
          rec.test_accuracy = e.accuracy;
        }
        if (on_epoch) on_epoch(rec);
        std::lock_guard lock(merge);
        result.train.epochs.push_back(rec);
      }
    }
    std::lock_guard lock(merge);
    sums[static_cast<std::size_t>(rank)] = sum;
  });

  // The servers' parameters are the model.
  std::vector<float> final_params(count);
  long stale_sum = 0, stale_count = 0;
  result.staleness_histogram.assign(kHistogramBins, 0);
  for (const auto& sh : shards) {
    std::copy(sh->params.begin(), sh->params.end(),
              final_params.begin() + static_cast<std::ptrdiff_t>(sh->range.offset));
    stale_sum += sh->staleness_sum;
    stale_count += sh->staleness_count;
    result.max_staleness = std::max(result.max_staleness, sh->staleness_max);
    for (std::size_t i = 0; i < kHistogramBins; ++i) result.staleness_histogram[i] += sh->histogram[i];
    result.train.optimizer_state_bytes += static_cast<double>(sh->optimizer->state_bytes());
  }
  result.mean_staleness = stale_count ? static_cast<double>(stale_sum) / stale_count : 0;
  if (test.size() > 0) {
    Mlp eval(config.layers, train);
    result.final_test_accuracy = eval.evaluate(final_params, test).accuracy;
  }
  const double n = static_cast<double>(workers) * static_cast<double>(total_steps);
  for (const StepTimes& s : sums) {
    result.train.mean.iteration += s.iteration / n;
    result.train.mean.compute += s.compute / n;
    result.train.mean.comm += s.comm / n;
    result.train.mean.exposed += s.exposed / n;
  }
  if (result.train.mean.iteration > 0) {
    result.train.samples_per_second =
        static_cast<double>(workers) * config.batch / result.train.mean.iteration;
  }
  result.train.replicas_agree = true;  // one copy: the servers'
  result.train.params = std::move(final_params);
  return result;
}

}  // namespace gradex
