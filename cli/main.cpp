// gradex: the command line. Each subcommand is in a file of its own
// (cli/*_command.cpp); this file parses and dispatches, and turns errors
// into one-line messages and exit codes (cli/command.h).
#include <CLI/CLI.hpp>

#include <iostream>
#include <string>
#include <vector>

#include "cli/command.h"
#include "common/cancel.h"
#include "common/debug_log.h"
#include "common/errors.h"
#include "gpu/cuda.h"
#include "runner/machine.h"

int main(int argc, char** argv) {
  using namespace gradex;
  using namespace gradex::cli;
  CLI::App app{"gradex: compare gradient-exchange schemes (parameter server, ring, tree, "
               "halving-doubling, hierarchical) on the same data"};
  set_command_line(argc, argv);
  // Evaluated only when asked: it looks for GPUs.
  app.set_version_flag("--version", [] { return gradex_version_text() + "\n" + cuda_summary(); });
  app.require_subcommand(0, 1);
  const std::vector<Command> commands = {add_run_command(app), add_simulate_command(app), add_validate_command(app),
                                         add_list_command(app), add_train_command(app),
                                         add_launch_command(app), add_tune_command(app),
                                         add_plot_command(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "gradex: error: " << e.what() << " (see gradex --help)\n";
    return kExitBadInput;
  }
  try {
    // Before any run starts: INT and TERM then cancel it (common/cancel.h).
    gradex::install_cancel_handlers();
    gradex::debug_enabled();  // GRADEX_DEBUG=typo is an error before anything runs
    for (const Command& c : commands) {
      if (c.app->parsed()) return c.run();
    }
    // `gradex` alone: what it can do, as --help says it.
    std::cout << app.help();
    return kExitOk;
  } catch (const gradex::ConfigError& e) {
    std::cerr << "gradex: error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    // Once a signal arrived, whatever ended the run (the check point that
    // saw it, or a peer's abort it caused) reports the cancel.
    if (const int sig = gradex::cancel_signal(); sig != 0) {
      std::cerr << "gradex: cancelled by signal " + std::to_string(sig) + "\n" << std::flush;
      return kExitCancelled + sig;
    }
    // One write, so that lines of several launched ranks never interleave.
    std::cerr << std::string("gradex: run failed: ") + e.what() + "\n" << std::flush;
    return kExitFailed;
  }
}
