// gradex tune: measures every candidate of the auto scheme at each of the
// scenario's sizes and worker counts on its (real) transport, in rounds
// whose order reverses each time, and writes OUT/tuned.json: per size the
// scheme with the lowest median time over the rounds, and every
// candidate's time. A scenario's "auto": {"table": "OUT/tuned.json"} then
// makes auto run those choices (NCCL's tuner plug-ins; Horovod's autotune).
#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>

#include "cli/command.h"
#include "cli/scenario_flags.h"
#include "common/errors.h"
#include "common/units.h"
#include "config/tuned_table_file.h"
#include "runner/atomic_file.h"
#include "runner/execute.h"
#include "runner/machine.h"
#include "runner/measure.h"
#include "runner/output_paths.h"
#include "runner/report.h"
#include "schemes/auto_scheme.h"

namespace gradex::cli {

namespace {

// Rounds per tuning: enough for a median that one disturbed round does not
// move, few enough to tune a sweep in minutes.
constexpr int kDefaultRounds = 3;

struct TuneFlags {
  ScenarioFlags scenario;
  int rounds = kDefaultRounds;
};

// auto's candidates on `workers`, as the plan would make it.
std::vector<std::string> candidates_at(const TuneFlags& f, int workers) {
  ScenarioFlags one = f.scenario;
  one.workers = {workers};
  one.schemes = {"auto"};
  one.no_output = true;
  const RunPlan plan = load_plan(one);
  return dynamic_cast<const AutoScheme&>(*plan.runs.front().instance).candidates();
}

// Every candidate's time at each size on `workers`, one list per size and
// scheme with a median per round.
using Times = std::map<std::size_t, std::map<std::string, std::vector<double>>>;

Times measure_rounds(const TuneFlags& f, int workers, std::ostream& out) {
  std::vector<std::string> order = candidates_at(f, workers);
  Times times;
  for (int round = 1; round <= f.rounds; ++round) {
    ScenarioFlags one = f.scenario;
    one.workers = {workers};
    one.schemes = order;
    one.no_output = true;
    out << "# " << workers << " workers, round " << round << " of " << f.rounds << ":";
    for (const std::string& name : order) out << " " << name;
    out << std::endl;
    for (const ResultRow& row : execute_plan(load_plan(one), [](const auto&, const auto&) {})) {
      if (row.wrong != 0) {
        throw InvariantError(row.scheme + " reduced " + std::to_string(row.wrong) +
                             " values wrongly at " + std::to_string(row.bytes) + " bytes");
      }
      times[row.bytes][row.scheme].push_back(row.time);
    }
    std::reverse(order.begin(), order.end());  // who goes first changes the times
  }
  return times;
}

double median_of(const std::vector<double>& xs) {
  Measurement m;
  m.seconds = xs;
  return m.median();
}

void print_choice(std::ostream& out, const TunedSize& size) {
  const std::string best = fastest(size);
  double second = 0;
  std::string runner_up = "-";
  for (const auto& [name, t] : size.seconds) {
    if (name != best && (second == 0 || t < second)) {
      second = t;
      runner_up = name;
    }
  }
  const double t = size.seconds.at(best);
  out << std::setw(8) << size.workers << std::setw(12) << size.bytes << std::setw(20) << best
      << std::setw(12) << fmt("%.1f", t * 1e6) << std::setw(20) << runner_up << std::setw(9)
      << (second > 0 ? fmt("%.2f", second / t) : std::string("-")) << "\n";
}

int tune(const TuneFlags& f, std::ostream& out) {
  if (f.rounds < 1) throw ConfigError("--rounds", "must be at least 1");
  if (!f.scenario.schemes.empty()) {
    throw ConfigError("--schemes", "tune measures auto's candidates: it takes no schemes");
  }
  ScenarioFlags probe = f.scenario;
  probe.schemes = {"auto"};
  const RunPlan plan = load_plan(probe);
  const Scenario& sc = plan.scenario;
  if (sc.training) throw ConfigError(scenario_label(f.scenario), "tune measures the all-reduce benchmark, not training");
  if (sc.transport == "sim") {
    throw ConfigError("--transport", "tune measures a real transport; on the simulator auto "
                                     "already picks by the cost model");
  }
  if (!sc.auto_table_path.empty()) {
    throw ConfigError(scenario_label(f.scenario) + "#/auto/table",
                      "tune writes a table; it does not read one");
  }
  if (sc.output.empty()) throw ConfigError("-o", "missing: the folder for tuned.json");
  check_output_folder(sc.output, f.scenario.output.empty() ? scenario_label(f.scenario) + "#/output" : "-o");
  out << provenance_line() << "\n# gradex tune: " << scenario_label(f.scenario) << ", transport "
      << sc.transport << ", " << f.rounds << " rounds, order reversed each round\n";
  std::vector<TunedSize> sizes;
  for (int workers : sc.workers) {
    for (const auto& [bytes, per_scheme] : measure_rounds(f, workers, out)) {
      TunedSize s{workers, bytes, {}};
      for (const auto& [name, rounds] : per_scheme) s.seconds[name] = median_of(rounds);
      sizes.push_back(std::move(s));
    }
  }
  out << "#\n#" << std::setw(7) << "workers" << std::setw(12) << "size (B)" << std::setw(20)
      << "fastest" << std::setw(12) << "time (us)" << std::setw(20) << "next" << std::setw(9)
      << "x slower" << "\n";
  for (const TunedSize& s : sizes) print_choice(out, s);
  const nlohmann::json about = {{"machine", describe_machine()},
                                {"rounds", f.rounds},
                                {"scenario", sc.source}};
  const std::filesystem::path file = std::filesystem::path(sc.output) / "tuned.json";
  write_files_atomically({{file, tuned_table_json(sc.transport, sizes, about).dump(2) + "\n"}});
  out << "# table written to " << file.string() << " (\"auto\": {\"table\": \"" << file.string()
      << "\"})\n";
  return kExitOk;
}

}  // namespace

Command add_tune_command(CLI::App& parent) {
  auto flags = std::make_shared<TuneFlags>();
  CLI::App* cmd = parent.add_subcommand(
      "tune", "measure auto's candidates per size on the real transport and write the table "
              "auto can run from");
  add_scenario_flags(*cmd, flags->scenario, true);
  cmd->add_option("-o,--output", flags->scenario.output,
                  "folder for tuned.json (overrides the scenario's \"output\")");
  cmd->add_option("--rounds", flags->rounds, "rounds, each candidate's order reversed (default 3)");
  add_unshaped_flag(*cmd, flags->scenario);
  return {cmd, [flags] { return tune(*flags, std::cout); }};
}

}  // namespace gradex::cli
