// A description of the machine, the build and the command that produced a
// result, embedded in every results file so numbers can be traced to where
// they came from (and re-run).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace gradex {

// "gradex 0.1.0 (commit 1a2b3c4d5e6f)": the version written once in
// CMakeLists.txt and the checkout's `git describe` at build time.
std::string gradex_version_text();

// This host's name ("" when the system does not say).
std::string host_name();

// "# gradex 0.1.0 (commit ...) on HOST, pid P, 2026-11-24T09:10:00Z": the
// line every text report opens with, as nccl-tests prints its version.
std::string provenance_line();

// Records this process's command line for describe_machine() (main() calls
// it first thing).
void set_command_line(int argc, const char* const* argv);

// Host, CPU, memory, compiler and build; gradex's version and commit; the
// versions of the libraries that carry the bytes or the arithmetic (Boost,
// ZeroMQ, the MPI library, Eigen); the command line; the time (UTC).
nlohmann::json describe_machine();

}  // namespace gradex
