// Training results as text: the per-scheme summary rows printed by
// `gradex train`, and the CSV / JSON files it writes.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/trainer.h"

namespace gradex {

struct TrainRun {
  std::string scheme;
  int workers = 0;
  TrainResult result;
};

void print_epoch(std::ostream& out, const std::string& scheme, const EpochRecord& e);
void print_train_summary(std::ostream& out, const std::vector<TrainRun>& runs);
// One row per (scheme, epoch) with the run's step timings repeated.
std::string train_csv(const std::vector<TrainRun>& runs);
nlohmann::json train_json(const std::vector<TrainRun>& runs, const nlohmann::json& config);

}  // namespace gradex
