// The server role: a summation service for one shard, ps-lite's default
// server handler reduced to its core. One synchronous round: take one push
// from every worker, combine them, answer every worker with the result.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "common/comm.h"
#include "common/dtype.h"
#include "common/reduce.h"
#include "ps/pattern.h"
#include "ps/sharding.h"

namespace gradex {

// The servers' accumulators, one per server, kept from round to round as a
// server process keeps its memory: a timed round then neither allocates
// nor zero-fills (nor, for large shards, faults in fresh pages). Server k's
// buffer is only ever used by the one endpoint that hosts k, so endpoints
// on threads or fibers of one process never share a buffer.
class ServerMemory {
 public:
  explicit ServerMemory(int servers) : buffers_(static_cast<std::size_t>(servers)) {}
  // At least `bytes` of server `server`'s memory; contents undefined.
  std::byte* accumulator(int server, std::size_t bytes);

 private:
  struct Buffer {
    std::unique_ptr<std::byte[]> data;
    std::size_t bytes = 0;
  };
  std::vector<Buffer> buffers_;
};

// Serves one round of server `server`, whose shard is the keys `shard` of
// a buffer of `dtype`, to the workers of `comm` listed in `order`, taking
// their pushes in that order (ServerLayout::arrival_order; the host itself
// may be one of them: its messages to itself are local copies),
// accumulating in `memory`. Chunk by chunk (`chunk` elements, sharding.h;
// 0: the whole shard): once every worker's part of a chunk is in
// (`pattern`: the whole chunk from each to combine, or each worker's own
// part to place), each worker's part of the result goes back while the
// next chunk is being received. Combines with combining_op(op); finishing
// an average is left to the workers. The workers' pull receives must be
// posted before this blocks on its sends.
void serve_round(Comm& comm, const std::vector<int>& order, int server, KeyRange shard,
                 std::size_t chunk, DType dtype, ReduceOp op, const PsPattern& pattern,
                 ServerMemory& memory);

}  // namespace gradex
