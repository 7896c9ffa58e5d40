#include "ps/worker.h"

#include "common/errors.h"
#include "ps/protocol.h"
#include "ps/server.h"

namespace gradex {

std::vector<Request> PsWorker::push(Tensor grad) {
  std::vector<Request> sent;
  for (int k = 0; k < layout_.servers(); ++k) {
    const KeyRange r = shard_range(grad.count, layout_.servers(), k);
    if (r.count == 0) continue;
    const Tensor part = grad.slice(r.offset, r.count);
    sent.push_back(comm_.isend(layout_.host(k), part.data, part.bytes(), push_tag(k)));
  }
  return sent;
}

std::vector<Request> PsWorker::pull(Tensor out) {
  std::vector<Request> received;
  for (int k = 0; k < layout_.servers(); ++k) {
    const KeyRange r = shard_range(out.count, layout_.servers(), k);
    if (r.count == 0) continue;
    const Tensor part = out.slice(r.offset, r.count);
    received.push_back(comm_.irecv(layout_.host(k), part.data, part.bytes(), pull_tag(k)));
  }
  return received;
}

void worker_round(Comm& comm, const ServerLayout& layout, Tensor data, ReduceOp op,
                  ServerMemory& memory) {
  GRADEX_ENFORCE(!data.phantom() || comm.phantom_payloads(), "a worker needs its gradient, rank ",
                 comm.rank());
  PsWorker worker(comm, layout);
  // Everything is posted before anything blocks: sends are rendezvous, so
  // a server (possibly this endpoint) can only answer once every worker's
  // pull receive is in place.
  std::vector<Request> pulls = worker.pull(data);
  std::vector<Request> pushes = worker.push(data);
  for (int k : layout.hosted_on(comm.rank())) {
    serve_round(comm, layout.workers(), k, shard_range(data.count, layout.servers(), k).count,
                data.dtype, op, memory);
  }
  worker.wait(pushes);
  worker.wait(pulls);
  finish_reduce(data, op, layout.workers());
}

}  // namespace gradex
