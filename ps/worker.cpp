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
    // Each worker starts its round at another server (rotated by rank),
    // so the workers' first chunks spread over the servers' NICs instead
    // of all converging on server 0's.
    for (int i = 0; i < servers; ++i) {
      const int k = layout_.server_at(comm_.rank(), i);
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

void PsWorker::push_paced(Tensor grad) {
  // Posting the next chunk only when the last has left keeps each server's
  // ingress taking the workers' chunks in turn. Posted all at once, a
  // shaped link books them in posting order, worker after worker, and a
  // server would wait for every worker's first chunk until the last
  // worker's turn came: the pipeline would not fill until the end.
  each_chunk(grad, [&](int host, const Tensor& part, int k) {
    Request sent = comm_.isend(host, part.data, part.bytes(), push_tag(k));
    comm_.wait(sent);
    return sent;
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
  const std::vector<int> hosted = layout.hosted_on(comm.rank());
  if (chunk > 0 && hosted.empty()) {
    // Pipelined to servers elsewhere: nothing here has to run meanwhile.
    worker.push_paced(data);
  } else {
    // A server hosted here must serve while this worker's pushes are out.
    std::vector<Request> pushes = worker.push(data);
    for (int k : hosted) {
      serve_round(comm, layout.arrival_order(k), k, layout.shard(data.count, k).count, chunk,
                  data.dtype, op, memory);
    }
    worker.wait(pushes);
  }
  worker.wait(pulls);
  finish_reduce(data, op, layout.workers());
}

}  // namespace gradex
