// gradex run: every planned run at every size, printed as nccl-tests style
// tables while it goes, then the summary and the result files.
#include <iostream>
#include <memory>

#include "cli/command.h"
#include "cli/scenario_flags.h"
#include "runner/execute.h"
#include "runner/report.h"

namespace gradex::cli {

Command add_run_command(CLI::App& parent) {
  auto flags = std::make_shared<ScenarioFlags>();
  auto quiet = std::make_shared<bool>(false);
  CLI::App* cmd = parent.add_subcommand("run", "run a scenario and print nccl-tests style tables");
  add_scenario_flags(*cmd, *flags, true);
  cmd->add_option("-o,--output", flags->output,
                  "folder for results.csv and results.json (overrides the scenario's \"output\")");
  cmd->add_flag("--no-output", flags->no_output, "write no result files");
  cmd->add_flag("-q,--quiet", *quiet, "print only the summary");
  add_unshaped_flag(*cmd, *flags);
  return {cmd, [flags, quiet] {
            std::vector<RunPlan> plans = load_plans(*flags);
            const Scenario& first = plans.front().scenario;
            check_output_paths(*flags, first);
            std::ostream& out = std::cout;
            if (first.training) return run_training_scenario(plans.front(), *flags, *quiet, out);
            print_preamble(out, first);
            std::vector<ResultRow> all;
            for (const RunPlan& plan : plans) {
              if (!plan.sweep.empty()) out << "#\n# sweep point: " << plan.sweep << "\n";
              const PlannedRun* current = nullptr;
              auto rows = execute_plan(plan, [&](const PlannedRun& run, const ResultRow& row) {
                if (*quiet) return;
                if (current != &run) {
                  print_run_header(out, run);
                  current = &run;
                }
                print_row(out, row);
              });
              print_summary(out, plan.scenario, rows);
              all.insert(all.end(), rows.begin(), rows.end());
            }
            if (!first.output.empty()) {
              write_results(first.output, first, all);
              out << "# results written to " << first.output << "/results.{csv,json}\n";
            }
            return all_correct(all) ? kExitOk : kExitWrong;
          }};
}

}  // namespace gradex::cli
