#include "ps/server.h"

#include <deque>
#include <vector>

#include "common/errors.h"
#include "ps/protocol.h"
#include "ps/sharding.h"

namespace gradex {

std::byte* ServerMemory::accumulator(int server, std::size_t bytes) {
  GRADEX_ENFORCE(server >= 0 && static_cast<std::size_t>(server) < buffers_.size(), "server ",
                 server);
  Buffer& b = buffers_[static_cast<std::size_t>(server)];
  if (b.bytes < bytes) {
    b.data.reset(new std::byte[bytes]);  // default-initialised: not zeroed
    b.bytes = bytes;
  }
  return b.data.get();
}

void serve_round(Comm& comm, const std::vector<int>& order, int server, KeyRange shard,
                 std::size_t chunk, DType dtype, ReduceOp op, const PsPattern& pattern,
                 ServerMemory& memory) {
  if (shard.count == 0) return;  // an empty shard moves nothing (protocol.h)
  // The server's own memory: a dedicated server holds no gradient, and a
  // co-located one must not touch its worker's buffer, which is still
  // being pushed from and pulled into.
  // A phantom-payload transport (the simulator) gets a phantom accumulator:
  // the same messages, no memory.
  const bool phantom = comm.phantom_payloads();
  const Tensor acc{phantom ? nullptr : memory.accumulator(server, shard.count * dtype_size(dtype)),
                   shard.count, dtype};
  // Range r of the buffer, as it sits in the accumulator.
  const auto held = [&](KeyRange r) { return acc.slice(r.offset - shard.offset, r.count); };
  const ReduceOp combine = combining_op(op);
  // The replies of the last kChunksInFlight chunks (protocol.h), oldest
  // first, a group per chunk: a chunk's sums leave while the next chunks
  // come in, and a chunk waits for the replies of the chunk that many
  // before it.
  std::deque<std::vector<Request>> replies;
  std::vector<Request> parts;
  for (std::size_t j = 0; j < chunk_count(shard.count, chunk); ++j) {
    const KeyRange r = chunk_range(shard, chunk, j);
    if (replies.size() == kChunksInFlight) {
      comm.wait_all(replies.front());
      replies.pop_front();
    }
    if (pattern.combines()) {
      // Push: the first contribution is copied in (no identity element
      // needed, which min and max lack); the others are combined one at a
      // time, since two outstanding receive-reduces into r would overlap.
      const Tensor part = held(r);
      Request first = comm.irecv(order.front(), part.data, part.bytes(), push_tag(server));
      comm.wait(first);
      for (std::size_t i = 1; i < order.size(); ++i) {
        Request next = comm.irecv_reduce(order[i], part, combine, push_tag(server));
        comm.wait(next);
      }
    } else {
      // Placed: each key has one contributor, so the parts land side by
      // side, all at once.
      for (int w : order) {
        const KeyRange p = pattern.pushed(w, r);
        if (p.count == 0) continue;
        const Tensor part = held(p);
        parts.push_back(comm.irecv(w, part.data, part.bytes(), push_tag(server)));
      }
      comm.wait_all(parts);
      parts.clear();
    }
    // Pull: each worker's part of the result goes back. Posting the sends
    // without waiting lets them leave while the next chunk comes in, in
    // whatever order the workers are ready.
    std::vector<Request>& sent = replies.emplace_back();
    sent.reserve(order.size());
    for (int w : order) {
      const KeyRange p = pattern.pulled(w, r);
      if (p.count == 0) continue;
      const Tensor part = held(p);
      sent.push_back(comm.isend(w, part.data, part.bytes(), pull_tag(server)));
    }
  }
  for (std::vector<Request>& sent : replies) comm.wait_all(sent);
}

}  // namespace gradex
