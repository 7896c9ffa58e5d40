// Training through a parameter server that holds the parameters and runs
// the optimizer (ps-lite / DistBelief style), under a consistency model
// (ps/consistency.h: BSP, ASP, SSP). Workers pull the parameters, compute
// a gradient on their next batch and push it; the servers
// (ps/training_server.h) apply it and answer the next pull when the model
// lets them. Asynchronous servers apply each gradient with lr / workers,
// so one pass over the data moves the parameters as far as BSP's averaged
// steps do.
//
// Everything goes through Comm, so it runs on every transport: threads of
// this process (inproc, or tcp/zmq endpoints on loopback), processes under
// `gradex launch`, and the simulator, shaped or not. A straggler
// (TrainConfig::straggler_ms) makes the consistency models differ visibly. Endpoints 0..W-1 are
// the workers, W..W+S-1 the servers, one shard each (ps/sharding.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ps/consistency.h"
#include "ps/training_server.h"
#include "train/trainer.h"

namespace gradex {

struct PsTrainConfig {
  Consistency consistency = Consistency::bsp;
  int staleness = 2;  // SSP's bound s, in steps
  int servers = 1;
};

struct PsTrainResult {
  TrainResult train;  // params: the servers' final parameters
  // Staleness of each applied gradient: updates its shard applied between
  // the worker's pull of the values it used and the gradient's arrival.
  StalenessStats staleness;
  std::optional<double> final_test_accuracy;  // of the servers' final parameters, when evaluated
};

// Throws ConfigError (naming the field) for a configuration PS training
// cannot run, before any rank starts.
void check_ps_training(const PsTrainConfig& ps, const TrainConfig& config, int workers,
                       std::size_t samples);

// One endpoint's share over `comm` (comm.size() == workers + ps.servers).
// Rank 0 returns the run's result, gathered over `comm`; the others return
// an empty one.
PsTrainResult ps_train_rank(Comm& comm, const PsTrainConfig& ps, const TrainConfig& config,
                            const ModelSource& source, int workers,
                            const EpochCallback& on_epoch = {});

// ps_train_rank on every rank of a World of `transport` made in this
// process (transport/world.h).
PsTrainResult train_parameter_server(const PsTrainConfig& ps, const TrainConfig& config,
                                     int workers, const ModelSource& source,
                                     const std::string& transport = "inproc",
                                     const TransportOptions& transport_options = {},
                                     const EpochCallback& on_epoch = {});

// The MLP on `train` (evaluated on `test` unless it is empty), in-process.
PsTrainResult train_parameter_server(const PsTrainConfig& ps, const TrainConfig& config,
                                     int workers, const Dataset& train, const Dataset& test,
                                     const TransportOptions& transport = {},
                                     const EpochCallback& on_epoch = {});

}  // namespace gradex
