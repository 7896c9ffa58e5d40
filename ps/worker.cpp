#include "ps/worker.h"

#include <algorithm>

#include "common/errors.h"
#include "ps/protocol.h"
#include "ps/server.h"

namespace gradex {

template <typename Post>
std::vector<Request> PsWorker::each_chunk(Tensor data, Post post) {
  const int servers = layout_.servers();
  std::vector<Request> posted;
  std::size_t most = 0;
  for (int k = 0; k < servers; ++k) {
    most = std::max(most, chunk_count(layout_.shard(data.count, k).count, chunk_));
  }
  for (std::size_t j = 0; j < most; ++j) {
    for (int k = 0; k < servers; ++k) {
      const KeyRange shard = layout_.shard(data.count, k);
      if (j >= chunk_count(shard.count, chunk_)) continue;
      const KeyRange r = chunk_range(shard, chunk_, j);
      posted.push_back(post(layout_.host(k), data.slice(r.offset, r.count), k));
    }
  }
  return posted;
}

std::vector<Request> PsWorker::push(Tensor grad) {
  return each_chunk(grad, [&](int host, const Tensor& part, int k) {
    return comm_.isend(host, part.data, part.bytes(), push_tag(k));
  });
}

std::vector<Request> PsWorker::pull(Tensor out) {
  return each_chunk(out, [&](int host, const Tensor& part, int k) {
    return comm_.irecv(host, part.data, part.bytes(), pull_tag(k));
  });
}

void worker_round(Comm& comm, const ServerLayout& layout, std::size_t chunk, Tensor data,
                  ReduceOp op, ServerMemory& memory) {
  GRADEX_ENFORCE(!data.phantom() || comm.phantom_payloads(), "a worker needs its gradient, rank ",
                 comm.rank());
  PsWorker worker(comm, layout, chunk);
  // Everything is posted before anything blocks: sends are rendezvous, so
  // a server (possibly this endpoint) can only answer once every worker's
  // pull receive is in place.
  std::vector<Request> pulls = worker.pull(data);
  std::vector<Request> pushes = worker.push(data);
  for (int k : layout.hosted_on(comm.rank())) {
    serve_round(comm, layout.workers(), k, layout.shard(data.count, k).count,
                chunk, data.dtype, op, memory);
  }
  worker.wait(pushes);
  worker.wait(pulls);
  finish_reduce(data, op, layout.workers());
}

}  // namespace gradex
