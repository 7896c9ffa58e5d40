// How a run ends, as the process's exit status: the runner decides it (a
// wrong result, a failed run), and every gradex command returns it.
#pragma once

namespace gradex {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;    // a run failed: timeout, lost peer
inline constexpr int kExitBadInput = 2;  // malformed scenario, wrong flag
inline constexpr int kExitWrong = 3;     // results wrong or traffic off-model
// A run cancelled by SIGINT or SIGTERM exits with kExitCancelled + signal
// (130, 143), as a shell reports a process killed by it, and writes nothing.
inline constexpr int kExitCancelled = 128;

}  // namespace gradex
