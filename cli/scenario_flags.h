// Flags shared by the subcommands that take a scenario file, and loading
// the scenario with those overrides applied and validated.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "runner/plan.h"
#include "train/train_job.h"

namespace gradex::cli {

struct ScenarioFlags {
  std::string scenario;
  std::vector<std::string> schemes;
  std::vector<int> workers;
  std::string output;
  bool no_output = false;
  int servers = 0;          // > 0: overrides the scenario's ps.servers
  std::string transport;    // non-empty: overrides the scenario's transport
  bool unshaped = false;    // drop the scenario's network: the real one sets the pace
};

void add_scenario_flags(CLI::App& cmd, ScenarioFlags& flags);
// --unshaped, for the subcommands that move real bytes (run, launch).
void add_unshaped_flag(CLI::App& cmd, ScenarioFlags& flags);
// Throws ConfigError naming the scenario field ("x.json#/sizes/0") or the
// flag at fault.
RunPlan load_plan(const ScenarioFlags& flags);
// How errors found after loading name a workload field: with the file, as
// the parser names fields ("x.json#/workload/batch").
FieldNamer workload_fields(const ScenarioFlags& flags);
// Checks, before the run, that the results folder and the trace file of
// `scenario` (loaded with `flags`) can be written (runner/output_paths.h):
// ConfigError naming -o or the scenario's field ("x.json#/output") otherwise.
void check_output_paths(const ScenarioFlags& flags, const Scenario& scenario);
// Runs a scenario whose workload trains (`gradex run` and `gradex simulate`
// alike): the epochs as they end, then the summary and the result files.
// `quiet` does not apply (each epoch's line is the progress) and is refused.
int run_training_scenario(const RunPlan& plan, const ScenarioFlags& flags, bool quiet,
                          std::ostream& out);

}  // namespace gradex::cli
