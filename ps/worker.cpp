#include "ps/worker.h"

#include <algorithm>

#include "allreduce/ring.h"
#include "common/errors.h"
#include "ps/protocol.h"
#include "ps/push_pull_round.h"
#include "ps/server.h"

namespace gradex {

template <typename Part, typename Post>
std::vector<Request> PsWorker::each_chunk(const Tensor& data, Part part, Post post) {
  // Only servers first_server_ and up: the hybrid PS's n workers' own
  // servers are left out, and walking past them would cost each of n
  // workers n steps per call.
  const int servers = layout_.servers() - first_server_;
  std::vector<Request> posted;
  if (servers <= 0) return posted;
  std::size_t most = 0;
  for (int k = first_server_; k < layout_.servers(); ++k) {
    most = std::max(most, chunk_count(layout_.shard(data.count, k).count, chunk_));
  }
  // Each worker starts its round at another server (rotated by rank among
  // the servers it visits), so the workers' first chunks spread over the
  // servers' NICs instead of all converging on the first one's.
  const int start = comm_.rank() % servers;
  for (std::size_t j = 0; j < most; ++j) {
    for (int i = 0; i < servers; ++i) {
      const int k = first_server_ + (start + i) % servers;
      const KeyRange shard = layout_.shard(data.count, k);
      if (j >= chunk_count(shard.count, chunk_)) continue;
      const KeyRange r = part(chunk_range(shard, chunk_, j));
      if (r.count == 0) continue;  // this worker moves none of it (pattern.h)
      posted.push_back(post(layout_.host(k), r, k));
    }
  }
  return posted;
}

KeyRange PsWorker::pushed(KeyRange r) const { return pattern_.pushed(comm_.rank(), r); }
KeyRange PsWorker::pulled(KeyRange r) const { return pattern_.pulled(comm_.rank(), r); }

std::vector<Request> PsWorker::push(Tensor grad) {
  return each_chunk(
      grad, [&](KeyRange r) { return pushed(r); },
      [&](int host, KeyRange r, int k) { return send(host, grad, r, push_tag(k)); });
}

Request PsWorker::send(int host, const Tensor& data, KeyRange r, Tag tag) {
  const Tensor part = data.slice(r.offset, r.count);
  return comm_.isend(host, part.data, part.bytes(), tag);
}

Request PsWorker::receive(int host, const Tensor& data, KeyRange r, Tag tag) {
  const Tensor part = data.slice(r.offset, r.count);
  return comm_.irecv(host, part.data, part.bytes(), tag);
}

std::vector<Request> PsWorker::pull(Tensor out) {
  return each_chunk(
      out, [&](KeyRange r) { return pulled(r); },
      [&](int host, KeyRange r, int k) { return receive(host, out, r, pull_tag(k)); });
}

namespace {

// BytePS's hybrid: n workers each summing x S of the keys, k dedicated
// servers the rest. A worker's own server exchanges x S / n with each of
// the other n-1 workers each way; here those bytes move as a ring's
// reduce-scatter and all-gather over the x S keys (the ring's block r is
// server r's shard, summed around the ring, then passed around), which
// puts exactly the push/pull's 2 (n-1)/n x S through each NIC each way,
// but as one flow per NIC direction instead of 2 (n-1).
//
// On a NIC shared fairly between its flows, that difference decides the
// result. Beside 2 (n-1) co-located flows, a worker's k flows to the
// dedicated servers would get k / (2 (n-1) + k) of its NIC (1/8 each at
// n = 8, k = 2), a dedicated server's ingress would take n of them (half
// its rate) and the dedicated shards, the larger, would finish last with
// the workers' NICs idle. Beside one ring flow, each of the k flows gets
// the B/n a dedicated server's NIC gives each of its n workers, the ring
// the (n-k)/n B left, and every NIC stays busy to the end, as Theorem 1's
// key split assumes (k < n; at k >= n the workers hold no keys).
//
// The pushes and pulls are posted before the ring starts and move while
// it runs. The ring is the workers, ranks 0..n-1, and its two tags are
// below the servers' (push_tag and pull_tag of servers n and up), so its
// messages never meet theirs.
void hybrid_round(Comm& comm, const ServerLayout& layout, std::size_t chunk, Tensor data,
                  ReduceOp op) {
  const int n = layout.workers();
  PsWorker worker(comm, layout, chunk, /*first_server=*/n);
  std::vector<Request> pulls = worker.pull(data);
  std::vector<Request> pushes = worker.push(data);
  const Tensor own = data.slice(0, layout.colocated_keys(data.count));
  if (n > 1 && own.count > 0) {
    constexpr Tag kRingReduceScatterTag = 0;
    constexpr Tag kRingAllGatherTag = 1;
    // The dedicated servers are n >= 2 and up.
    static_assert(kRingAllGatherTag < push_tag(2), "the ring's tags below every server's");
    const std::size_t segment = chunk * dtype_size(data.dtype);
    ring_reduce_scatter(comm, own, combining_op(op), segment, kRingReduceScatterTag, n);
    ring_all_gather(comm, own, segment, kRingAllGatherTag, n);
  }
  worker.wait(pushes);
  worker.wait(pulls);
  finish_reduce(data, op, n);
}

}  // namespace

void worker_round(Comm& comm, const ServerLayout& layout, std::size_t chunk, Tensor data,
                  ReduceOp op, ServerMemory& memory, Collective collective) {
  GRADEX_ENFORCE(!data.phantom() || comm.phantom_payloads(), "a worker needs its gradient, rank ",
                 comm.rank());
  if (layout.placement() == ServerPlacement::hybrid) {
    GRADEX_ENFORCE(collective == Collective::all_reduce, "the hybrid PS runs all-reduce only");
    hybrid_round(comm, layout, chunk, data, op);
    return;
  }
  const PsPattern pattern(collective, data.count, layout.workers());
  RoundWindow window;
  if (chunk > 0 && layout.placement() == ServerPlacement::dedicated) {
    // Pipelined to servers elsewhere, a worker keeps a chunk per server in
    // flight (a window's worth at most). Posted all at once, a shaped link
    // books the pushes in posting order, worker after worker, and a server
    // would wait for every worker's first chunk until the last worker's
    // turn came: the pipeline would not fill until the end (16 chunks in
    // flight to one server from each of 4 workers took 1.66x the
    // simulated time on shaped threads, ShapedVsSim.PipelinedParameter*).
    window.pushes = static_cast<std::size_t>(layout.servers());
  }
  push_pull_round(comm, layout, pattern, chunk, data, op, memory, window);
  // An average is finished where the sum lands: everywhere after an
  // all-reduce, on this worker's block after a reduce-scatter.
  if (collective == Collective::all_reduce) finish_reduce(data, op, layout.workers());
  if (collective == Collective::reduce_scatter) {
    const KeyRange own = pattern.pulled(comm.rank(), KeyRange{0, data.count});
    finish_reduce(data.slice(own.offset, own.count), op, layout.workers());
  }
}

}  // namespace gradex
