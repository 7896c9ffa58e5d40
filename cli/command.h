// One subcommand of the gradex CLI: its CLI11 sub-app (flags and help) and
// the action that runs it once parsed. Each subcommand lives in its own
// file; main.cpp only lists them.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

#include "runner/exit_codes.h"

namespace gradex::cli {

struct Command {
  CLI::App* app;
  std::function<int()> run;
};

Command add_run_command(CLI::App& parent);
Command add_simulate_command(CLI::App& parent);
Command add_validate_command(CLI::App& parent);
Command add_list_command(CLI::App& parent);
Command add_launch_command(CLI::App& parent);
Command add_train_command(CLI::App& parent);
Command add_tune_command(CLI::App& parent);
Command add_plot_command(CLI::App& parent);

}  // namespace gradex::cli
