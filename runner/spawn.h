// Starting the processes of a run on this machine and watching them: what
// `gradex launch -n N` does before the ranks find each other by themselves.
#pragma once

#include <chrono>
#include <ostream>
#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace gradex {

using EnvVars = std::vector<std::pair<std::string, std::string>>;

// Starts `count` copies of this executable with `args` (argv[1..]); copy r
// gets GRADEX_RANK=r, GRADEX_WORLD_SIZE=count and `env` on top of this
// process's environment. Each copy is killed when this process ends, however
// it ends (PR_SET_PDEATHSIG), so no rank outlives its launcher. Returns the
// pids in rank order.
//
// `hosts` (empty, or one per rank) names where each rank runs. A rank on
// another host (runner/hostfile.h: is_this_host) is started through the
// remote shell, GRADEX_RSH split at spaces (default kRemoteShell), as
// `RSH HOST 'cd CWD && ... exec env VARS EXE ARGS'`: the same executable
// path and working directory on every host, as mpirun assumes, with only
// `env` and the rank's own variables (plus GRADEX_DEBUG when set here),
// and GRADEX_TOKEN read from the shell's standard input, never on a
// command line that others on that host could list. The pid is the remote
// shell's: killing it ends the connection, and the remote rank, if it
// outlives that, ends at its own wait deadline.
inline constexpr const char* kRemoteShell = "ssh -o BatchMode=yes";
std::vector<pid_t> spawn_ranks(const std::vector<std::string>& args, int count, const EnvVars& env,
                               const std::vector<std::string>& hosts = {});

// Waits for every child. Once one fails, the others get `grace` to end on
// their own (they should, within their wait timeout) and are then killed,
// so the launcher never hangs. Failures are logged naming the rank.
// Returns 0 when all succeeded, else the exit code to report (1 when a
// rank crashed or was killed, otherwise the first non-zero code by rank).
// On SIGINT or SIGTERM (common/cancel.h) the signal is passed on to every
// rank, those still running a few seconds later are killed, and the result
// is 128 + signal.
int supervise(const std::vector<pid_t>& children, std::chrono::milliseconds grace,
              std::ostream& log);

}  // namespace gradex
