// GRADEX_DEBUG=1: one line to stderr for each step a process takes on the
// way to a result (joining the rendezvous, each connection, each
// measurement it starts and ends, each launched process that exits), so a
// run that hangs or fails says where every rank was, as NCCL_DEBUG=INFO
// does. Off (GRADEX_DEBUG unset, empty or 0), it costs one branch.
#pragma once

#include <string>

#include "common/errors.h"

namespace gradex {

// Whether GRADEX_DEBUG=1; throws ConfigError naming GRADEX_DEBUG for any
// value but 0 and 1 (main() asks first, so a typo is an error at once).
bool debug_enabled();
// "gradex debug [pid P, 12.345 s] text", in one write so that lines from
// several processes and threads do not interleave.
void debug_line(const std::string& text);

}  // namespace gradex

// Formats its arguments only when debugging is on.
#define GRADEX_DEBUG_LOG(...)                                                        \
  do {                                                                               \
    if (::gradex::debug_enabled()) ::gradex::debug_line(::gradex::detail::concat(__VA_ARGS__)); \
  } while (0)
