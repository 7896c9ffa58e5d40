// One synchronous parameter-server round on one endpoint, the one engine
// of every PS but the hybrid's workers: a worker's pushes and pulls, and
// the servers the endpoint hosts (co-located, or the one of a dedicated
// server's endpoint), ps-lite's server handler reduced to its core: take
// each worker's push of a chunk, combine them (or place them, pattern.h),
// answer each worker with its part of the result.
//
// The order (ServerLayout): worker w's step s is server server_at(w, s);
// a server takes its workers in the order their chunks reach it so (at
// step s the workers k - s mod servers, by rank), and so never waits on
// one worker while another's chunk is already there; the hosted servers
// of one endpoint merged step by step; in chunks (sharding.h),
// chunk by chunk. A chunk's answers go out once all of it is in, and a
// chunk is taken once the answers of the chunk kChunksInFlight before it
// are delivered (protocol.h).
//
// Windows: posted all at once, n workers that each host a server hold n
// pushes, n pulls and n replies apiece, 3 n^2 open operations (3 million
// at 1,024 simulated ranks, 1.5 GiB). As BytePS's scheduler keeps credits
// for the partitions in flight, each of an endpoint's four streams
// (pushes, pulls, takes, replies) keeps a window: kRoundWindow messages,
// or kRoundBytes of them where the messages are small, so that a link's
// bandwidth-delay product stays in flight (a window of 16 messages of 128
// bytes put 2.4x its model's time on 64 ranks over HDR InfiniBand, a
// latency per window). What an endpoint holds open then depends on the
// message size, not on n; while a stream is no longer than its window,
// everything is posted at once.
//
// Why windows cannot deadlock: every endpoint posts its pushes and pulls
// in increasing step, and takes and answers in non-decreasing step, each
// stream refilled as soon as one of its operations ends, whatever the
// endpoint waits for meanwhile. Of the operations posted and not yet
// matched, the one of the lowest step waits for a counterpart that its
// stream would post next, and that stream has room: a worker has one
// operation per step and stream, and a window holds at least two.
#pragma once

#include <cstddef>
#include <limits>

#include "common/comm.h"
#include "common/dtype.h"
#include "common/reduce.h"
#include "ps/pattern.h"
#include "ps/server.h"
#include "ps/sharding.h"

namespace gradex {

// The operations of one stream (pushes, pulls, a server's takes or its
// replies) an endpoint holds open in a round: kRoundWindow messages, or
// more of them where that many carry less than kRoundBytes. 4 MiB take
// 168 us on HDR InfiniBand's 25 GB/s and 9 us on H100 NVLink's 450,
// above every preset's per-message latency.
inline constexpr std::size_t kRoundWindow = 16;
inline constexpr std::size_t kRoundBytes = std::size_t{4} << 20;

struct RoundWindow {
  std::size_t messages = kRoundWindow;  // at least 2 (see above)
  std::size_t bytes = kRoundBytes;
  // Fewer pushes open than the window where not 0, and kChunksInFlight
  // times as many pulls (protocol.h): a pipelined worker of dedicated
  // servers keeps a chunk per server in flight (worker.cpp says why).
  std::size_t pushes = 0;
};
// Everything at once: the hybrid's dedicated servers, whose workers post
// every push and pull up front (parameter_server.cpp says why).
inline constexpr RoundWindow kUnboundedWindow{std::numeric_limits<std::size_t>::max(), 0};

// Runs endpoint comm.rank()'s side of one round of `pattern`'s collective
// over `data` in chunks of `chunk` elements (0: whole shards): a worker's
// pushes and pulls (from `data`, into it), and the servers it hosts
// (accumulating in `memory`, combining with combining_op(op)), with
// `window` per stream. Returns with every message of this endpoint
// delivered; finishing an average is left to the caller.
void push_pull_round(Comm& comm, const ServerLayout& layout, const PsPattern& pattern,
                     std::size_t chunk, Tensor data, ReduceOp op, ServerMemory& memory,
                     RoundWindow window = {});

}  // namespace gradex
