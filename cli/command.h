// One subcommand of the gradex CLI: its CLI11 sub-app (flags and help) and
// the action that runs it once parsed. Each subcommand lives in its own
// file; main.cpp only lists them.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace gradex::cli {

// Exit codes shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;    // a run failed: timeout, lost peer
inline constexpr int kExitBadInput = 2;  // malformed scenario, wrong flag
inline constexpr int kExitWrong = 3;     // results wrong or traffic off-model
// A run cancelled by SIGINT or SIGTERM exits with kExitCancelled + signal
// (130, 143), as a shell reports a process killed by it, and writes nothing.
inline constexpr int kExitCancelled = 128;

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

}  // namespace gradex::cli
