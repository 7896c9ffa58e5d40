// The messages of one synchronous parameter-server round. For each server
// k with a non-empty shard, every worker sends its slice of the shard to
// k's host (push) and receives the combined slice back (pull). A shard of
// zero elements moves no message on either side.
//
// Each shard has its own pair of tags, so that a host running several
// servers (co-located, more servers than workers) never confuses them.
#pragma once

#include "common/comm.h"

namespace gradex {

inline Tag push_tag(int server) { return 2 * static_cast<Tag>(server); }
inline Tag pull_tag(int server) { return 2 * static_cast<Tag>(server) + 1; }

}  // namespace gradex
