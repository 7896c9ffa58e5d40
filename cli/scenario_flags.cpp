#include "cli/scenario_flags.h"

#include <algorithm>

#include "common/errors.h"
#include "config/scenario.h"
#include "runner/output_paths.h"
#include "runner/train_plan.h"
#include "schemes/registry.h"
#include "transport/options.h"
#include "train/train_job.h"

namespace gradex::cli {

void add_scenario_flags(CLI::App& cmd, ScenarioFlags& flags) {
  cmd.add_option("scenario", flags.scenario, "scenario file (JSON)")->required();
  cmd.add_option("--schemes", flags.schemes, "run only these schemes (overrides the scenario)")
      ->delimiter(',');
  cmd.add_option("--workers", flags.workers, "worker counts to run (overrides the scenario)")
      ->delimiter(',');
  cmd.add_option("--transport", flags.transport, "transport (overrides the scenario's)")
      ->check(CLI::IsMember(std::vector<std::string>(std::begin(kTransportNames),
                                                     std::end(kTransportNames))));
}

void add_unshaped_flag(CLI::App& cmd, ScenarioFlags& flags) {
  cmd.add_flag("--unshaped", flags.unshaped,
               "ignore the scenario's network: run as fast as the real network goes (e.g. one "
               "shaped with tc between hosts)");
}

FieldNamer workload_fields(const ScenarioFlags& flags) {
  return [path = flags.scenario](const std::string& key) { return path + "#/workload/" + key; };
}

namespace {

RunPlan plan_with_overrides(const ScenarioFlags& flags, Scenario s) {
  // Each override goes into the scenario embedded in results.json too, so
  // that the file there re-runs the plan that ran.
  nlohmann::json& source = s.source;
  if (!flags.schemes.empty()) {
    s.schemes = flags.schemes;
    s.all_schemes = false;
    for (const auto& name : s.schemes) find_scheme(name, "--schemes");
    source["schemes"] = flags.schemes;
  }
  if (!flags.transport.empty()) {
    s.transport = flags.transport;
    source["transport"] = flags.transport;
    // A real run's wall-clock settings mean nothing to the simulator.
    if (s.transport == "sim") {
      source.erase("timeout_ms");
      source.erase("spin_us");
    }
  }
  if (!flags.workers.empty()) {
    const int most = s.transport == "sim" ? kMaxSimulatedRanks : kMaxRealRanks;
    for (int w : flags.workers) {
      if (w < 1 || w > most) {
        throw ConfigError("--workers", "must be between 1 and " + std::to_string(most) +
                                           (s.transport == "sim" ? "" : " (more on --transport sim)"));
      }
    }
    s.workers = flags.workers;
    source["workers"] = flags.workers;
  }
  if (flags.servers > 0) {
    s.ps_servers = flags.servers;
    source["ps"]["servers"] = flags.servers;
  }
  if (!flags.output.empty()) {
    s.output = flags.output;
    source["output"] = flags.output;
  }
  if (flags.no_output) {
    s.output.clear();
    source.erase("output");
  }
  if (flags.unshaped) {
    s.network = NetworkConfig{};
    source.erase("network");
  }
  // Names only train/ knows (models, optimizers, hooks), checked before
  // anything runs or any process starts.
  if (s.training) {
    check_train_workload(*s.training, workload_pointer());
    // Every worker of the largest run shares this machine: threads of
    // `gradex run`, or the processes `gradex launch -n` starts here.
    const int largest = *std::max_element(s.workers.begin(), s.workers.end());
    check_train_memory(*s.training, largest, workload_pointer());
  }
  return plan_runs(std::move(s));
}

}  // namespace

RunPlan load_plan(const ScenarioFlags& flags) {
  Scenario s = load_scenario(flags.scenario);  // its errors name the file already
  try {
    return plan_with_overrides(flags, std::move(s));
  } catch (const ConfigError& e) {
    // Checks after parsing name a JSON pointer alone; flags name themselves.
    if (e.field().rfind('/', 0) != 0) throw;
    throw ConfigError(flags.scenario + "#" + e.field(), e.reason());
  }
}

void check_output_paths(const ScenarioFlags& flags, const Scenario& s) {
  if (!s.output.empty()) {
    check_output_folder(s.output, !flags.output.empty() ? "-o" : flags.scenario + "#/output");
  }
  if (s.training && !s.training->trace.empty()) {
    check_output_file(s.training->trace, workload_fields(flags)("trace"));
  }
}

int run_training_scenario(const RunPlan& plan, const ScenarioFlags& flags, bool quiet,
                          std::ostream& out) {
  if (quiet) throw ConfigError("-q", "applies to all-reduce workloads; a training run prints its epochs");
  const TrainJob job(*plan.scenario.training, workload_fields(flags));
  job.check_worker_counts(plan.scenario.workers, workload_fields(flags));
  print_train_preamble(out, plan.scenario, job);
  return run_train_plan(plan, job, out);
}

}  // namespace gradex::cli
