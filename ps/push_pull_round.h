// One push-and-pull round on a worker endpoint, with the servers this
// endpoint hosts (co-located placement) served in the same pass. Every
// message of the round is posted a bounded window at a time.
//
// Why windows: posted all at once, n workers that each host a server hold
// n pushes, n pulls and n replies apiece, 3 n^2 open operations: a
// simulated 1,024 ranks needed 1.5 GiB for them. As BytePS's scheduler
// keeps a number of credits for the partitions in flight, an endpoint
// here keeps a window per stream: kRoundWindow messages, or kRoundBytes
// of them where the messages are small, so that a link's bandwidth-delay
// product is always in flight (a window of 16 messages of 128 bytes put
// 2.4x its model's time on 64 ranks over HDR InfiniBand, a latency per
// window). What an endpoint holds open then depends on the message size,
// not on n, and while n is within the window everything is posted at
// once, as before.
//
#pragma once

#include <cstddef>

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
};

// Runs worker comm.rank()'s side of one round of `pattern`'s collective
// over `data` in chunks of `chunk` elements (0: whole shards), and the
// servers it hosts (accumulating in `memory`, combining with
// combining_op(op)), with `window` per stream. Returns with every message of this
// endpoint delivered; finishing an average is left to the caller.
void push_pull_round(Comm& comm, const ServerLayout& layout, const PsPattern& pattern,
                     std::size_t chunk, Tensor data, ReduceOp op, ServerMemory& memory,
                     RoundWindow window = {});

}  // namespace gradex
