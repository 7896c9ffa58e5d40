// The worker role, shaped like ps-lite's KVWorker for one dense gradient:
// push() and pull() post their messages and return the requests, and the
// caller waits on them when it needs the result.
#pragma once

#include <vector>

#include "common/comm.h"
#include "common/dtype.h"
#include "common/reduce.h"
#include "ps/pattern.h"
#include "ps/server.h"
#include "ps/sharding.h"

namespace gradex {

class PsWorker {
 public:
  // `chunk`: the pipelining chunk in elements (sharding.h; 0: whole shards).
  // Servers below `first_server` are left out (hybrid: the workers' own).
  // `pattern`: which part of each chunk this worker pushes and pulls
  // (pattern.h; by default all of it, as an all-reduce).
  PsWorker(Comm& comm, const ServerLayout& layout, std::size_t chunk, int first_server = 0,
           PsPattern pattern = PsPattern(Collective::all_reduce, 0, 1))
      : comm_(comm),
        layout_(layout),
        chunk_(chunk),
        first_server_(first_server),
        pattern_(pattern) {}

  // Sends each non-empty shard of `grad` to the endpoint of its server, in
  // chunks: chunk 0 of every shard, then chunk 1 of every shard, ..., so
  // every server can start summing after one chunk per worker.
  std::vector<Request> push(Tensor grad);
  // Receives each non-empty shard of the combined result into `out`, in
  // place and in the same chunk order. `out` may be the pushed buffer: a
  // chunk's result can only come back after its server has received this
  // worker's push of it.
  std::vector<Request> pull(Tensor out);
  void wait(std::vector<Request>& requests) { comm_.wait_all(requests); }

 private:
  // Posts `post(host, part(r), server)` for every chunk r of every shard
  // of `data` whose part is not empty.
  template <typename Part, typename Post>
  std::vector<Request> each_chunk(const Tensor& data, Part part, Post post);
  // Range r of `data` to or from `host`.
  Request send(int host, const Tensor& data, KeyRange r, Tag tag);
  Request receive(int host, const Tensor& data, KeyRange r, Tag tag);
  KeyRange pushed(KeyRange r) const;
  KeyRange pulled(KeyRange r) const;

  Comm& comm_;
  const ServerLayout& layout_;
  std::size_t chunk_;
  int first_server_;
  PsPattern pattern_;
};

// One synchronous round of `collective` on worker endpoint comm.rank():
// push, pull (pattern.h), and run the servers this endpoint hosts
// (co-located placement) in between, accumulating in `memory`, each
// stream a window at a time (push_pull_round.h). Hybrid
// placement (all-reduce only) moves the workers' own servers' keys as a
// ring among the workers instead (see worker.cpp). Ends with `data` as the
// collective leaves it, in place.
void worker_round(Comm& comm, const ServerLayout& layout, std::size_t chunk, Tensor data,
                  ReduceOp op, ServerMemory& memory,
                  Collective collective = Collective::all_reduce);

}  // namespace gradex
