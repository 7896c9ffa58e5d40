// gradex simulate: a scenario on the simulator (transport "sim"), whatever
// the scenario's own transport, printed as one table per run with the
// alpha-beta model beside the simulated time, and written as the usual
// results.{csv,json} (model_time_s column). --servers sweeps the number of
// parameter servers (BytePS-style dedicated machines) as well.
#include <chrono>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/scenario_flags.h"
#include "common/errors.h"
#include "common/units.h"
#include "runner/execute.h"
#include "runner/report.h"

namespace gradex::cli {

namespace {

void print_header(std::ostream& out, const PlannedRun& run, int servers) {
  out << "#\n# " << run.scheme << " (simulated): workers " << run.workers << ", endpoints "
      << run.instance->endpoints();
  if (run.scheme.rfind("ps", 0) == 0) out << ", servers " << servers;
  out << "\n#" << std::setw(11) << "size" << std::setw(14) << "model" << std::setw(14)
      << "simulated" << std::setw(9) << "sim/mod" << std::setw(10) << "busbw" << std::setw(8)
      << "util" << std::setw(11) << "wall" << std::setw(13) << "messages" << std::setw(11)
      << "peak-ops" << "\n"
      << "#" << std::setw(11) << "(B)" << std::setw(14) << "(ms)" << std::setw(14) << "(ms)"
      << std::setw(9) << "" << std::setw(10) << "(GB/s)" << std::setw(8) << "(%)"
      << std::setw(11) << "(ms)" << std::setw(13) << "" << std::setw(11) << "(open)" << "\n";
}

void print_line(std::ostream& out, const ResultRow& r, double wall_seconds) {
  out << std::setw(12) << r.bytes << std::setw(14) << fmt("%.4f", r.model_time * 1e3)
      << std::setw(14) << fmt("%.4f", r.time * 1e3) << std::setw(9)
      << (r.model_time > 0 ? fmt("%.3f", r.time / r.model_time) : std::string("-"))
      << std::setw(10) << fmt("%.2f", r.busbw / 1e9) << std::setw(8)
      << (r.utilisation < 0 ? std::string("-") : fmt("%.1f", r.utilisation * 100))
      << std::setw(11) << fmt("%.1f", wall_seconds * 1e3) << std::setw(13)
      << (r.engine ? std::to_string(r.engine->messages) : std::string("-")) << std::setw(11)
      << (r.engine ? std::to_string(r.engine->peak_operations) : std::string("-"))
      << row_notes(r) << "\n";
  out.flush();
}

}  // namespace

Command add_simulate_command(CLI::App& parent) {
  auto flags = std::make_shared<ScenarioFlags>();
  CLI::App* cmd = parent.add_subcommand(
      "simulate", "run a scenario on the simulator: virtual time, phantom buffers, model beside it");
  add_scenario_flags(*cmd, *flags, true);
  cmd->add_option("-o,--output", flags->output,
                  "folder for results.csv and results.json (overrides the scenario's \"output\")");
  cmd->add_flag("--no-output", flags->no_output, "write no result files");
  auto quiet = std::make_shared<bool>(false);
  cmd->add_flag("-q,--quiet", *quiet, "print no line per size (the result files hold them)");
  return {cmd, [flags, quiet] {
            std::ostream& out = std::cout;
            ScenarioFlags f = *flags;
            f.transport = "sim";
            const std::vector<RunPlan> plans = load_plans(f);
            const Scenario& scenario = plans.front().scenario;
            check_output_paths(f, scenario);
            if (scenario.training) return run_training_scenario(plans.front(), f, *quiet, out);
            print_preamble(out, scenario);
            out << "# simulated: virtual time, phantom buffers (values not checked); "
                   "model = Scheme::predicted_time (alpha-beta, launch included)\n";
            std::vector<ResultRow> all;
            for (const RunPlan& plan : plans) {
              if (!plan.sweep.empty()) out << "#\n# sweep point: " << plan.sweep << "\n";
              const PlannedRun* current = nullptr;
              auto last = std::chrono::steady_clock::now();
              auto rows = execute_plan(plan, [&](const PlannedRun& run, const ResultRow& row) {
                if (*quiet) return;
                const auto now = std::chrono::steady_clock::now();
                if (current != &run) {
                  print_header(out, run, plan.scenario.ps_servers);
                  current = &run;
                }
                print_line(out, row, std::chrono::duration<double>(now - last).count());
                last = now;
              });
              all.insert(all.end(), std::make_move_iterator(rows.begin()),
                         std::make_move_iterator(rows.end()));
            }
            if (!scenario.output.empty()) {
              write_results(scenario.output, scenario, all);
              out << "# results written to " << scenario.output << "/results.{csv,json}\n";
            }
            return all_correct(all) ? kExitOk : kExitWrong;
          }};
}

}  // namespace gradex::cli
