// gradex list: the registered schemes, in registry order.
#include <iomanip>
#include <iostream>

#include "cli/command.h"
#include "schemes/registry.h"

namespace gradex::cli {

Command add_list_command(CLI::App& parent) {
  CLI::App* cmd = parent.add_subcommand("list", "list the registered schemes");
  return {cmd, [] {
            for (const auto& e : scheme_registry()) {
              std::cout << std::left << std::setw(18) << e.name << e.summary << "\n";
            }
            return kExitOk;
          }};
}

}  // namespace gradex::cli
