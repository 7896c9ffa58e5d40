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
  PsWorker(Comm& comm, const ServerLayout& layout) : comm_(comm), layout_(layout) {}

  // Sends each non-empty shard of `grad` to the endpoint of its server.
  std::vector<Request> push(Tensor grad);
  // Receives each non-empty shard of the combined result into `out`, in
  // place. `out` may be the pushed buffer: a shard's result can only come
  // back after its server has received this worker's push of it.
  std::vector<Request> pull(Tensor out);
  void wait(std::vector<Request>& requests) { comm_.wait_all(requests); }

 private:
  Comm& comm_;
  const ServerLayout& layout_;
};

// One synchronous round on worker endpoint comm.rank(): push every shard,
// pull every result, and run the servers this endpoint hosts (co-located
// placement) in between, accumulating in `memory`. Ends with op over all
// workers' `data`, in place.
void worker_round(Comm& comm, const ServerLayout& layout, Tensor data, ReduceOp op,
                  ServerMemory& memory);

}  // namespace gradex
