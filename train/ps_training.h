// Training through a parameter server that holds the parameters and runs
// the optimizer (ps-lite / DistBelief style), under three consistency
// models:
//   BSP  every server waits for all workers' gradients of a step, applies
//        their average once, and only then answers the pulls (lock-step);
//   ASP  a server applies each worker's gradient as it arrives and answers
//        that worker at once (no waiting, unbounded staleness);
//   SSP  as ASP, but a worker's pull for step c is held back until the
//        slowest worker has pushed step c - s (staleness bound s).
// Asynchronous servers apply each gradient with lr / workers, so one pass
// over the data moves the parameters as far as BSP's averaged steps do.
//
// A server is one shard of the parameters (ps/sharding's key ranges) with
// one handler endpoint per worker, as a real server has a connection
// thread per client: every handler has its own Comm (no receive-from-any
// is needed) and they share the shard, its optimizer and its clocks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "transport/inproc/world.h"
#include "train/dataset.h"
#include "train/trainer.h"

namespace gradex {

enum class Consistency { bsp, asp, ssp };
Consistency parse_consistency(const std::string& text, const std::string& field = "consistency");
std::string consistency_name(Consistency c);

struct PsTrainConfig {
  Consistency consistency = Consistency::bsp;
  int staleness = 2;  // SSP's bound s, in steps
  int servers = 1;
  // The last worker sleeps this long every step: a straggler that makes
  // the consistency models differ visibly on an unloaded machine.
  double straggler_ms = 0;
};

struct PsTrainResult {
  TrainResult train;  // params: the servers' final parameters
  // Staleness of each applied gradient: updates the shard received between
  // the worker's pull of the parameters it used and the gradient's arrival.
  double mean_staleness = 0;
  long max_staleness = 0;
  std::vector<long> staleness_histogram;  // [k] = gradients with staleness k (last bin: more)
  double final_test_accuracy = 0;  // of the servers' final parameters
};

PsTrainResult train_parameter_server(const PsTrainConfig& ps, const TrainConfig& config,
                                     int workers, const Dataset& train, const Dataset& test,
                                     const TransportOptions& transport = {},
                                     const EpochCallback& on_epoch = {});

}  // namespace gradex
