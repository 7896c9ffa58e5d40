// What a scenario runs: the all-reduce benchmark (the default) or data-
// parallel training ("workload": {"kind": "train", ...}). A train workload
// holds the same knobs as `gradex train`'s flags, as plain values: this
// layer only checks their JSON types and ranges; train/train_job.h checks
// the names it knows (model profiles, optimizers, compression hooks) and
// turns them into a training configuration.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/json_reader.h"

namespace gradex {

// torch DDP's bucket caps in MiB (PyTorch 1.13): bucket_cap_mb's default
// (torch.nn.parallel.DistributedDataParallel) and the first bucket's
// (c10d's kDefaultFirstBucketBytes, torch.distributed._DEFAULT_FIRST_BUCKET_BYTES).
inline constexpr double kDdpBucketMb = 25;
inline constexpr double kDdpFirstBucketMb = 1;

struct TrainWorkload {
  std::string model = "mlp";        // "mlp" or a model profile (train/profiles.h)
  std::string layers = "256-256";   // MLP hidden sizes; "" for a linear model
  std::string optimizer = "sgd";
  double lr = 0;                    // <= 0: the optimizer's default
  double momentum = 0.9;
  int batch = 64;                   // samples per worker per micro-batch
  int accumulate = 1;               // micro-batches per optimizer step
  int epochs = 1;
  long max_steps = -1;              // optimizer steps per epoch at most; -1: the whole shard
  std::uint64_t seed = 1;
  double bucket_mb = kDdpBucketMb;  // a bucket closes once it holds this much
  double first_bucket_mb = kDdpFirstBucketMb;  // the first (last layers') bucket's
  bool overlap = true;
  std::string compression = "none";
  std::string data_dir;             // empty: the installed Fashion-MNIST
  std::size_t train_samples = 0;    // 0: all
  std::string trace;                // Chrome trace path; empty: none
  int trace_steps = 5;
  double fwd_ms = 15;               // profiled models: emulated forward time
  double bwd_ratio = 2;
  double param_scale = 1;
  std::vector<std::string> consistency;  // PS training (bsp, asp, ssp) instead of the schemes
  int staleness = 2;
  // The last worker starts every step this much later (the scenario's
  // top-level "straggler_ms", which the benchmark reads too).
  double straggler_ms = 0;
  // Also run the training with the exchange skipped (torch's no_sync), so
  // that the report gives comm-share = 1 - no-sync step / step.
  bool no_sync_baseline = false;
  // The ZeRO stage (train/trainer.h): 0 replicated (DDP), 2 gradients and
  // optimizer state sharded over the workers.
  int zero = 0;
  // ZeRO-3 only: layers wrapped into units of at least this many MiB
  // (FSDP's size-based auto-wrap); 0: one unit per layer.
  double unit_mb = 0;
};

// Reads the "workload" object at `pointer` (its "kind" included). Returns
// nullopt for {"kind": "allreduce"}. Throws ConfigError naming the pointer
// of the first bad value.
std::optional<TrainWorkload> parse_workload(const nlohmann::json& value, const std::string& pointer);

}  // namespace gradex
