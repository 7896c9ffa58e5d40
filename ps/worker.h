// The worker role, shaped like ps-lite's KVWorker for one dense gradient:
// push() and pull() post their messages and return the requests, and the
// caller waits on them when it needs the result.
#pragma once

#include <vector>

#include "common/comm.h"
#include "common/dtype.h"
#include "common/reduce.h"
#include "ps/server.h"
#include "ps/sharding.h"

namespace gradex {

class PsWorker {
 public:
  // `chunk`: the pipelining chunk in elements (sharding.h; 0: whole shards).
  // Servers below `first_server` are left out (hybrid: the workers' own).
  PsWorker(Comm& comm, const ServerLayout& layout, std::size_t chunk, int first_server = 0)
      : comm_(comm), layout_(layout), chunk_(chunk), first_server_(first_server) {}

  // Sends each non-empty shard of `grad` to the endpoint of its server, in
  // chunks: chunk 0 of every shard, then chunk 1 of every shard, ..., so
  // every server can start summing after one chunk per worker.
  std::vector<Request> push(Tensor grad);
  // The same chunks, one round (a chunk per server) in flight at most:
  // returns when all have been taken. Only for a worker that hosts no server (it blocks meanwhile).
  void push_paced(Tensor grad);
  // Receives each non-empty shard of the combined result into `out`, in
  // place and in the same chunk order. `out` may be the pushed buffer: a
  // chunk's result can only come back after its server has received this
  // worker's push of it.
  std::vector<Request> pull(Tensor out);
  void wait(std::vector<Request>& requests) { comm_.wait_all(requests); }

 private:
  // Posts `post(host, part, tag)` for every chunk of every shard of `data`.
  template <typename Post>
  std::vector<Request> each_chunk(Tensor data, Post post);

  Comm& comm_;
  const ServerLayout& layout_;
  std::size_t chunk_;
  int first_server_;
};

// One synchronous round on worker endpoint comm.rank(): push every shard,
// pull every result, and run the servers this endpoint hosts (co-located
// placement) in between, accumulating in `memory`. Hybrid placement moves
// the workers' own servers' keys as a ring among the workers instead (see
// worker.cpp). Ends with op over all workers' `data`, in place.
void worker_round(Comm& comm, const ServerLayout& layout, std::size_t chunk, Tensor data,
                  ReduceOp op, ServerMemory& memory);

}  // namespace gradex
