// The one list of named schemes. The CLI, the tests and the benchmarks all
// iterate it, so a scheme is run, tested and benchmarked by being added here
// (Horovod's operation manager, as a plain ordered list).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/scheme.h"

namespace gradex {

struct SchemeEntry {
  std::string name;
  std::string summary;
  // Builds the scheme; an entry may fix options (a preset such as
  // dp_master pins one server co-located on worker 0).
  std::function<std::unique_ptr<Scheme>(const SchemeOptions&)> make;
  // The baselines call a library's own collectives and run only where
  // that library can: the MPI ones in an MPI job, the NCCL ones on the
  // nccl transport. Every other scheme runs on any Comm (threads,
  // processes, simulator).
  bool baseline = false;
  // Whether the scheme can run in this process now (Horovod's Enabled());
  // empty: always.
  std::function<bool()> enabled = nullptr;
  // The transport it needs, if one ("nccl"); the plan refuses others.
  std::string needs_transport = {};
  // Why enabled() is false, for `gradex list`.
  std::function<std::string()> why_unavailable = nullptr;
};

const std::vector<SchemeEntry>& scheme_registry();
// The schemes that run on any Comm, in registry order: what the tests and
// the benchmarks iterate (the baselines need their library's environment).
std::vector<std::string> portable_scheme_names();
// Throws ConfigError naming `field` and listing the known names.
const SchemeEntry& find_scheme(std::string_view name, const std::string& field = "scheme");
std::unique_ptr<Scheme> make_scheme(std::string_view name, const SchemeOptions& options);

}  // namespace gradex
