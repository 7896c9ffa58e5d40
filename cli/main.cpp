// gradex: the command line. Subcommands run a scenario, validate one, and
// list the registered schemes.
//
// Exit codes: 0 success; 1 a run failed (timeout, lost peer); 2 bad input
// (malformed scenario, wrong flag); 3 results were wrong (#wrong > 0 or
// traffic differing from the scheme's model).
#include <CLI/CLI.hpp>

#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

#include "common/errors.h"
#include "common/scenario.h"
#include "runner/execute.h"
#include "runner/plan.h"
#include "runner/report.h"
#include "schemes/registry.h"

namespace {

constexpr int kExitFailed = 1;
constexpr int kExitBadInput = 2;
constexpr int kExitWrong = 3;

struct RunFlags {
  std::string scenario;
  std::string output;
  bool no_output = false;
  std::vector<std::string> schemes;
  std::vector<int> workers;
  bool quiet = false;
};

gradex::RunPlan load_plan(const RunFlags& flags) {
  gradex::Scenario s = gradex::load_scenario(flags.scenario);
  if (!flags.schemes.empty()) {
    s.schemes = flags.schemes;
    s.all_schemes = false;
    for (const auto& name : s.schemes) gradex::find_scheme(name, "--schemes");
  }
  if (!flags.workers.empty()) {
    for (int w : flags.workers) {
      if (w < 1 || w > 1024) throw gradex::ConfigError("--workers", "must be between 1 and 1024");
    }
    s.workers = flags.workers;
  }
  if (!flags.output.empty()) s.output = flags.output;
  if (flags.no_output) s.output.clear();
  return gradex::plan_runs(std::move(s));
}

int run_command(const RunFlags& flags) {
  gradex::RunPlan plan = load_plan(flags);
  std::ostream& out = std::cout;
  gradex::print_preamble(out, plan.scenario);
  const gradex::PlannedRun* current = nullptr;
  auto rows = gradex::execute_plan(plan, [&](const gradex::PlannedRun& run, const gradex::ResultRow& row) {
    if (flags.quiet) return;
    if (current != &run) {
      gradex::print_run_header(out, run);
      current = &run;
    }
    gradex::print_row(out, row);
  });
  gradex::print_summary(out, plan.scenario, rows);
  if (!plan.scenario.output.empty()) {
    gradex::write_results(plan.scenario.output, plan.scenario, rows);
    out << "# results written to " << plan.scenario.output << "/results.{csv,json}\n";
  }
  return gradex::all_correct(rows) ? 0 : kExitWrong;
}

int validate_command(const RunFlags& flags) {
  gradex::RunPlan plan = load_plan(flags);
  std::cout << flags.scenario << ": valid (" << plan.runs.size() << " runs x "
            << plan.scenario.sizes.size() << " sizes)\n";
  return 0;
}

int list_command() {
  for (const auto& e : gradex::scheme_registry()) {
    std::cout << std::left << std::setw(18) << e.name << e.summary << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gradex: compare gradient-exchange schemes (parameter server, ring, tree, "
               "halving-doubling, hierarchical) on the same data"};
  app.set_version_flag("--version", "gradex 0.1.0");
  app.require_subcommand(1);

  RunFlags flags;
  auto add_scenario_flags = [&](CLI::App* cmd) {
    cmd->add_option("scenario", flags.scenario, "scenario file (JSON)")->required();
    cmd->add_option("--schemes", flags.schemes, "run only these schemes (overrides the scenario)")
        ->delimiter(',');
    cmd->add_option("--workers", flags.workers, "worker counts to run (overrides the scenario)")
        ->delimiter(',');
  };
  CLI::App* run = app.add_subcommand("run", "run a scenario and print nccl-tests style tables");
  add_scenario_flags(run);
  run->add_option("-o,--output", flags.output, "folder for results.csv and results.json "
                                               "(overrides the scenario's \"output\")");
  run->add_flag("--no-output", flags.no_output, "write no result files");
  run->add_flag("-q,--quiet", flags.quiet, "print only the summary");
  CLI::App* validate = app.add_subcommand("validate", "check a scenario without running it");
  add_scenario_flags(validate);
  CLI::App* list = app.add_subcommand("list", "list the registered schemes");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "gradex: error: " << e.what() << " (see gradex --help)\n";
    return kExitBadInput;
  }

  try {
    if (list->parsed()) return list_command();
    if (validate->parsed()) return validate_command(flags);
    return run_command(flags);
  } catch (const gradex::ConfigError& e) {
    std::cerr << "gradex: error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "gradex: run failed: " << e.what() << "\n";
    return kExitFailed;
  }
}
