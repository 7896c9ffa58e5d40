// gradex plot: draws result files with scripts/plot.py (matplotlib, from
// Debian's python3-matplotlib). The script, not this file, owns the
// options, so `gradex plot --help` is its help; this only finds it (the
// installed copy beside the command, else the source tree's) and hands it
// the arguments.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "common/errors.h"

namespace gradex::cli {

namespace {

constexpr const char* kPython = "/usr/bin/python3";

std::filesystem::path plot_script() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto installed = exe.parent_path().parent_path() / "share" / "gradex" / "plot.py";
    if (std::filesystem::exists(installed)) return installed;
  }
  const std::filesystem::path source = std::filesystem::path(GRADEX_SOURCE_DIR) / "scripts" / "plot.py";
  if (std::filesystem::exists(source)) return source;
  throw ConfigError("plot", "scripts/plot.py is neither installed beside gradex (share/gradex) "
                            "nor in the source tree it was built from (" GRADEX_SOURCE_DIR ")");
}

int run_plot(const std::vector<std::string>& args) {
  const std::string script = plot_script().string();
  std::vector<std::string> all = {kPython, script};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::cout.flush();
  ::execv(kPython, argv.data());
  throw ConfigError("plot", std::string("cannot run ") + kPython + ": " + std::strerror(errno) +
                                " (scripts/setup.sh installs python3-matplotlib)");
}

}  // namespace

Command add_plot_command(CLI::App& parent) {
  auto args = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd = parent.add_subcommand(
      "plot", "draw results.csv files: bus bandwidth against size, time against workers, "
              "training curves (gradex plot --help lists the options)");
  cmd->prefix_command();
  cmd->set_help_flag();  // --help goes to the script
  return {cmd, [cmd, args] {
            *args = cmd->remaining();
            return run_plot(*args);
          }};
}

}  // namespace gradex::cli
