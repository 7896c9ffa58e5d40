// Turning a scenario into the list of runs it asks for, validating
// everything (scheme names, options against world sizes) before anything
// runs, so bad input fails before any output exists.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/scenario.h"
#include "common/scheme.h"

namespace gradex {

struct PlannedRun {
  std::string scheme;
  std::string summary;
  int workers = 0;
  std::string sweep;  // the plan's sweep point, for its rows
  std::unique_ptr<Scheme> instance;
};

struct RunPlan {
  Scenario scenario;
  // Workers-major, then schemes in scenario order. Empty for a train
  // workload with "consistency": those runs are (workers, consistency model).
  std::vector<PlannedRun> runs;
  // One point of a sweep (config/sweeps.h): "ps.servers=2 ...", empty when
  // the scenario sweeps nothing; `swept_field` the first list's pointer.
  std::string sweep;
  std::string swept_field;
};

// Throws ConfigError naming the scenario field at fault.
RunPlan plan_runs(Scenario scenario);

}  // namespace gradex
