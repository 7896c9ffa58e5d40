// Training results as text: the per-scheme summary rows printed by
// `gradex train` (and `gradex run` / `gradex launch` of a train workload),
// the PS consistency table, and the contents of the CSV / JSON files.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/ps_training.h"
#include "train/trainer.h"

namespace gradex {

struct TrainRun {
  std::string scheme;
  int workers = 0;
  TrainResult result;
};

void print_epoch(std::ostream& out, const std::string& scheme, const EpochRecord& e);
// The summary: one row per run, then each run's bucket exchanges (start
// and end within the step). Its efficiencies:
// compute-share = compute / iteration: the share of a step not waiting for
// communication (1: all of it hidden).
// comm-share = 1 - no-sync step / step, against the no-sync baseline run
// with as many workers (torch users' measure), when there is one.
// scaling = samples/s with N workers / (N x the best samples/s of any
// synchronised one-worker run in the same invocation): efficiency against
// ideal linear scaling of the fastest single worker, so a scheme slower
// than another is not flattered by its own slow one-worker run.
void print_train_summary(std::ostream& out, const std::vector<TrainRun>& runs);
double compute_share(const TrainResult& result);
std::optional<double> comm_share(const std::vector<TrainRun>& runs, const TrainRun& run);
std::optional<double> scaling_efficiency(const std::vector<TrainRun>& runs, const TrainRun& run);
// The counted bytes equal the declared ones (true when nothing is declared
// or nothing was counted).
bool wire_matches_declared(const TrainResult& result);
// PS consistency training: the table's header, one row per run, and the
// row as JSON.
std::string staleness_header();
std::string staleness_row(const std::string& label, int servers, const PsTrainResult& result);
nlohmann::json staleness_json(const std::string& label, const PsTrainResult& result);
// One row per (scheme, epoch) with the run's step timings repeated.
std::string train_csv(const std::vector<TrainRun>& runs);
nlohmann::json train_json(const std::vector<TrainRun>& runs, const nlohmann::json& config);

}  // namespace gradex
