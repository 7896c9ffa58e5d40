// Flags shared by the subcommands that take a scenario file, and loading
// the scenario with those overrides applied and validated.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "runner/plan.h"

namespace gradex::cli {

struct ScenarioFlags {
  std::string scenario;
  std::vector<std::string> schemes;
  std::vector<int> workers;
  std::string output;
  bool no_output = false;
  int servers = 0;          // > 0: overrides the scenario's ps.servers
  std::string transport;    // non-empty: overrides the scenario's transport
};

void add_scenario_flags(CLI::App& cmd, ScenarioFlags& flags);
// Throws ConfigError naming the scenario field or the flag at fault.
RunPlan load_plan(const ScenarioFlags& flags);

}  // namespace gradex::cli
