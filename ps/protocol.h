// The messages of one synchronous parameter-server round. For each server
// k with a non-empty shard, every worker sends its slice of the shard to
// k's host (push) and receives the combined slice back (pull). A shard of
// zero elements moves no message on either side.
//
// Each shard has its own pair of tags, so that a host running several
// servers (co-located, more servers than workers) never confuses them.
#pragma once

#include <cstddef>

#include "common/comm.h"

namespace gradex {

// How far a pipelined round runs ahead, in chunks (push_pull_round.h): a
// server whose replies are unbounded (the hybrid's, a broadcast's) takes
// chunk j once its replies of chunk j - kChunksInFlight are delivered; a
// dedicated server's window holds this many chunks of its share of the
// workers; a pipelined worker of dedicated servers keeps this many times
// its pushes' window of pulls. Enough to keep a NIC busy in both
// directions (a chunk's replies leave while the next chunks come in), and
// what a round holds live stays independent of the shard's length:
// posted all at once, 1,024 workers' pulls of a 1 GB shard in 1 MiB
// chunks are a million open requests.
inline constexpr std::size_t kChunksInFlight = 4;

constexpr Tag push_tag(int server) { return 2 * static_cast<Tag>(server); }
constexpr Tag pull_tag(int server) { return 2 * static_cast<Tag>(server) + 1; }

}  // namespace gradex
