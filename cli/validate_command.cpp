// gradex validate: parse and plan a scenario without running anything.
#include <iostream>
#include <memory>

#include "cli/command.h"
#include "cli/scenario_flags.h"
#include "train/train_job.h"

namespace gradex::cli {

Command add_validate_command(CLI::App& parent) {
  auto flags = std::make_shared<ScenarioFlags>();
  CLI::App* cmd = parent.add_subcommand("validate", "check a scenario without running it");
  add_scenario_flags(*cmd, *flags, true);
  return {cmd, [flags] {
            const std::vector<RunPlan> plans = load_plans(*flags);
            const RunPlan& plan = plans.front();
            check_output_paths(*flags, plan.scenario);
            if (const auto& t = plan.scenario.training) {
              // Loads the data as a run would, to refuse the same plans.
              const TrainJob job(*t, workload_fields(*flags));
              job.check_worker_counts(plan.scenario.workers, workload_fields(*flags));
              const std::size_t runs = t->consistency.empty()
                                           ? plan.runs.size()
                                           : plan.scenario.workers.size() * t->consistency.size();
              std::cout << scenario_label(*flags) << ": valid (train workload: " << runs << " runs)\n";
              return kExitOk;
            }
            std::cout << scenario_label(*flags) << ": valid (";
            if (plans.size() > 1) std::cout << plans.size() << " sweep points x ";
            std::cout << plan.runs.size() << " runs x " << plan.scenario.sizes.size() << " sizes)\n";
            return kExitOk;
          }};
}

}  // namespace gradex::cli
