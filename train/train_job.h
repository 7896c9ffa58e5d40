// A training job as a scenario's train workload (or `gradex train`'s flags)
// describes it, made runnable: names checked, data loaded once, the loop's
// configuration built, and the model and data set each run needs. Also
// running one (scheme, workers) configuration with every endpoint a thread
// of this process over any transport (in-process, or loopback TCP/ZeroMQ).
// `gradex train`, `gradex run` and `gradex launch` all go through here.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/topology.h"
#include "transport/options.h"
#include "config/workload.h"
#include "train/profiled_model.h"
#include "train/ps_training.h"
#include "train/trainer.h"

namespace gradex {

// How errors name a workload field: a scenario's JSON pointer
// ("/workload/lr") or a command's flag ("--lr").
using FieldNamer = std::function<std::string(const std::string& key)>;
FieldNamer workload_pointer();

// Checks what the scenario parser cannot know: the model, the layer list,
// the optimizer and its hyper-parameters, the compression hook and the
// consistency models. Loads nothing.
void check_train_workload(const TrainWorkload& workload, const FieldNamer& field);

// Refuses (ConfigError naming the field that drives it) a workload whose
// model, gradients, optimizer state and activations cannot fit in this
// machine's memory when `ranks_here` workers share it. Loads nothing: the
// MLP is sized with Fashion-MNIST's 784 inputs and 10 classes.
void check_train_memory(const TrainWorkload& workload, int ranks_here, const std::string& transport,
                        const FieldNamer& field);

// Where the ranks of one run live: a World of transport `name` made in this
// process ("inproc" threads, or threads each holding a loopback endpoint
// of "tcp" or "zmq"), and its settings.
struct RankTransport {
  std::string name = "inproc";
  TransportOptions options;
};

class TrainJob {
 public:
  // Checks the workload and, for the MLP, loads the data (DataError when a
  // file is missing or corrupt).
  TrainJob(TrainWorkload workload, const FieldNamer& field);

  const TrainWorkload& workload() const { return workload_; }
  // The loop's configuration; each run may change overlap or tracing.
  const TrainConfig& config() const { return config_; }
  bool profiled() const { return profile_.has_value(); }
  // One line: what trains, on how much data, with which knobs.
  // Refuses (ConfigError naming the workload field) worker counts whose
  // shard of the data gives no full step, before any run starts: the
  // loop itself only finds out once it runs.
  void check_worker_counts(const std::vector<int>& workers, const FieldNamer& field) const;

  std::string describe() const;
  // The model and data of a run on `workers` workers (a profiled model's
  // emulated data set is sized to its steps).
  ModelSource source(int workers) const;
  // The configuration as results.json's "config".
  nlohmann::json config_json() const;
  // PS training with a consistency model (the MLP only).
  PsTrainConfig ps_config(Consistency consistency, int servers) const;
  // ... with every rank a thread of this process, over `transport`.
  PsTrainResult train_parameter_server(Consistency consistency, int workers, int servers,
                                       const RankTransport& transport,
                                       const EpochCallback& on_epoch) const;

 private:
  TrainWorkload workload_;
  TrainConfig config_;
  std::optional<ModelProfile> profile_;
  EmulationConfig emulation_;
  std::shared_ptr<const Dataset> train_, test_;
};

// One configuration: `scheme` over options.workers workers.
TrainResult run_training(const std::string& scheme, const SchemeOptions& options,
                         const TrainConfig& config, const ModelSource& source,
                         const RankTransport& transport, Trace* trace = nullptr,
                         const EpochCallback& on_epoch = {});

}  // namespace gradex
