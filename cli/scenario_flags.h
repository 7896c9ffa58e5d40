// Flags shared by the subcommands that take a scenario file, and loading
// the scenario with those overrides applied and validated.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

#include "runner/plan.h"
#include "train/train_job.h"

namespace gradex::cli {

// Scenario fields given as flags, nccl-tests' names where it has them
// (-b, -e, -f): each sets one field of the scenario document before it is
// parsed, so a run needs no file and the embedded scenario re-runs it.
struct FieldFlags {
  std::string name;
  std::string min_bytes, max_bytes;  // -b, -e: /sizes/from, /sizes/to
  // Set only when given, whatever the value: a value out of range is the
  // scenario's to refuse, naming the flag (a sentinel such as -1 for "not
  // given" let --iters -3 pass unnoticed).
  std::optional<int> step_factor;            // -f: /sizes/factor
  std::optional<int> iters, warmup;          // /iters, /warmup_iters
  std::string collective;  // /collective (nccl-tests: one binary per collective)
  std::string dtype, op;
  std::optional<int> ranks_per_node;
  std::string link, latency, intra_link;  // /network/inter_node, /network/intra_node
  std::string node;                       // /network/node
  std::string reducing_switch, node_switch;  // /network/switch, /network/node_switch
  std::string segment;                    // /segment_bytes
  std::optional<double> straggler_ms;
  std::optional<int> symmetric_subset;  // --symmetric-subset: /symmetric_subset
  std::vector<int> servers;  // --servers: /ps/servers, a sweep when several
};

struct ScenarioFlags {
  std::string scenario;  // empty: the scenario is made of the flags alone
  FieldFlags fields;
  std::vector<std::string> schemes;
  std::vector<int> workers;
  std::string output;
  bool no_output = false;
  std::optional<int> servers;  // launch: overrides the scenario's ps.servers
  std::string transport;    // non-empty: overrides the scenario's transport
  std::string device;       // non-empty: overrides the scenario's device
  bool unshaped = false;    // drop the scenario's network: the real one sets the pace
};

// The scenario file, --schemes, --workers and --transport; `with_fields`
// (run, simulate, validate) makes the file optional and adds the
// FieldFlags, and -n for --workers.
void add_scenario_flags(CLI::App& cmd, ScenarioFlags& flags, bool with_fields = false);
void add_field_flags(CLI::App& cmd, ScenarioFlags& flags);
// --collective (/collective), among the field flags and on its own for
// launch.
void add_collective_flag(CLI::App& cmd, ScenarioFlags& flags);
// --unshaped, for the subcommands that move real bytes (run, launch).
void add_unshaped_flag(CLI::App& cmd, ScenarioFlags& flags);
// The scenario file's path, or "(flags)" for a scenario made of flags.
std::string scenario_label(const ScenarioFlags& flags);
// Throws ConfigError naming the scenario field ("x.json#/sizes/0") or the
// flag at fault. load_plans gives one plan per point of the scenario's
// sweeps (config/sweeps.h; run, simulate and validate take them; a
// training workload runs one point); load_plan refuses a scenario that
// sweeps.
std::vector<RunPlan> load_plans(const ScenarioFlags& flags);
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
