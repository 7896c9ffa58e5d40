// The scenario file as `gradex validate` reads it: through the same
// load_plans as the command line (sweeps included), from a file, with no
// flags given.
#include "cli/scenario_flags.h"
#include "common/errors.h"
#include "fuzz/targets.h"

namespace gradex::fuzz {

void scenario_input(Input bytes) {
  const ScratchFile file(".json", bytes);
  cli::ScenarioFlags flags;
  flags.scenario = file.path().string();
  try {
    const std::vector<RunPlan> plans = cli::load_plans(flags);
    (void)plans;
  } catch (const InvariantError&) {
    // The project's word for a bug inside gradex, never a verdict on input.
    throw;
  } catch (const Error&) {
    // ConfigError (and any other typed error) is the promised answer to a
    // bad scenario: the command line prints it as one line.
  }
}

}  // namespace gradex::fuzz
