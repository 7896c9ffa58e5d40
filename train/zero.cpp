#include "train/zero.h"

#include <algorithm>
#include <mutex>

#include "allreduce/ring.h"
#include "common/cancel.h"
#include "common/errors.h"
#include "train/mlp.h"
#include "train/optimizer.h"
#include "train/param_buffer.h"

namespace gradex {

namespace {
constexpr Tag kReduceScatterTag = 11;
constexpr Tag kAllGatherTag = 12;
constexpr std::size_t kSegmentBytes = std::size_t{1} << 20;
}  // namespace

ZeroResult train_zero(const TrainConfig& config, int workers, const Dataset& train,
                      const Dataset& test, const TransportOptions& transport,
                      const EpochCallback& on_epoch) {
  if (workers < 1) throw ConfigError("workers", "need at least one worker");
  if (config.batch < 1 || config.accumulate < 1 || config.epochs < 1) {
    throw ConfigError("batch", "batch, accumulate and epochs must be at least 1");
  }
  Mlp probe(config.layers, train);
  const std::size_t count = probe.param_count();
  const BlockSplit split{count, static_cast<std::size_t>(workers)};
  long steps = static_cast<long>(train.size() / static_cast<std::size_t>(workers) /
                                 (static_cast<std::size_t>(config.batch) * config.accumulate));
  if (config.max_steps >= 0) steps = std::min(steps, config.max_steps);
  if (steps < 1) throw ConfigError("batch", "the training set gives no full step per worker");

  ZeroResult result;
  result.train.param_count = count;
  result.train.steps = steps * config.epochs;
  result.replicated_state_bytes =
      static_cast<double>(make_optimizer(config.optimizer, count)->state_bytes());
  std::vector<std::vector<float>> finals(static_cast<std::size_t>(workers));
  std::vector<StepTimes> sums(static_cast<std::size_t>(workers));
  std::mutex merge;
  InprocWorld world(workers, transport);

  run_ranks(world, [&](Comm& comm) {
    const int rank = comm.rank();
    const std::size_t lo = split.offset(static_cast<std::size_t>(rank));
    const std::size_t len = split.size(static_cast<std::size_t>(rank));
    Mlp model(config.layers, train);
    ParamBuffer params(count), grads(count);
    // Worker 0's initialisation, everywhere (its seed; no broadcast needed
    // to agree, but the all-gather below would repair any disagreement).
    model.init(params, config.seed);
    auto optimizer = make_optimizer(config.optimizer, len);
    const Tensor grad_tensor{grads.data(), count, DType::f32};
    const Tensor param_tensor{params.data(), count, DType::f32};
    const float scale = 1.0f / static_cast<float>(config.accumulate);
    StepTimes sum;
    double train_seconds = 0;
    for (int epoch = 0; epoch < config.epochs; ++epoch) {
      const auto shard = shard_indices(train.size(), rank, workers, config.seed, epoch);
      double loss_sum = 0;
      for (long s = 0; s < steps; ++s) {
        throw_if_cancelled();  // a cancelled run stops between steps
        const double t0 = comm.clock().now();
        std::fill(grads.begin(), grads.end(), 0.0f);
        for (int k = 0; k < config.accumulate; ++k) {
          const std::size_t first =
              (static_cast<std::size_t>(s) * config.accumulate + k) * config.batch;
          loss_sum += model.train_step(
              params, std::span<const std::size_t>(shard.data() + first, config.batch), grads,
              scale, {});
        }
        const double t1 = comm.clock().now();
        ring_reduce_scatter(comm, grad_tensor, ReduceOp::sum, kSegmentBytes, kReduceScatterTag);
        const double t2 = comm.clock().now();
        std::span<float> mine(grads.data() + lo, len);
        for (float& g : mine) g /= static_cast<float>(workers);
        optimizer->step(std::span<float>(params.data() + lo, len), mine);
        const double t3 = comm.clock().now();
        ring_all_gather(comm, param_tensor, kSegmentBytes, kAllGatherTag);
        const double t4 = comm.clock().now();
        sum.compute += (t1 - t0) + (t3 - t2);
        sum.comm += (t2 - t1) + (t4 - t3);
        sum.exposed += (t2 - t1) + (t4 - t3);
        sum.iteration += t4 - t0;
        train_seconds += t4 - t0;
      }
      if (rank == 0) {
        EpochRecord rec;
        rec.epoch = epoch + 1;
        rec.train_loss = loss_sum / static_cast<double>(steps * config.accumulate);
        rec.train_seconds = train_seconds;
        if (config.evaluate && test.size() > 0) {
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
    finals[static_cast<std::size_t>(rank)].assign(params.begin(), params.end());
    result.sharded_state_bytes_max =
        std::max(result.sharded_state_bytes_max, static_cast<double>(optimizer->state_bytes()));
  });

  const double n = static_cast<double>(workers) * static_cast<double>(result.train.steps);
  for (const StepTimes& s : sums) {
    result.train.mean.iteration += s.iteration / n;
    result.train.mean.compute += s.compute / n;
    result.train.mean.comm += s.comm / n;
    result.train.mean.exposed += s.exposed / n;
  }
  if (result.train.mean.iteration > 0) {
    result.train.samples_per_second = static_cast<double>(workers) * config.batch *
                                      config.accumulate / result.train.mean.iteration;
  }
  result.train.optimizer_state_bytes = result.sharded_state_bytes_max;
  result.train.replicas_agree = std::all_of(
      finals.begin(), finals.end(), [&](const std::vector<float>& f) { return f == finals[0]; });
  result.train.params = std::move(finals[0]);
  return result;
}

}  // namespace gradex
