#include "allreduce/ring.h"

#include <vector>

#include "allreduce/segments.h"
#include "common/cost_model.h"
#include "common/errors.h"

namespace gradex {

namespace {

std::size_t wrap(long long i, int n) { return static_cast<std::size_t>(((i % n) + n) % n); }

// The two ring phases share one schedule: at step s rank r sends block
// send_block(s) to r+1 and receives block send_block(s) - 1 from r-1, which
// it forwards at step s+1. Each block moves in segments: a segment is
// forwarded as soon as it has arrived, so step s+1 of segment j overlaps
// step s of segment j+1 (pipelining).
//
//   reduce-scatter: send block r-s-1, receive (and reduce) block r-s-2;
//                   after n-1 steps rank r holds the full sum of block r.
//   all-gather:     send block r-s, receive (and copy) block r-s-1;
//                   after n-1 steps rank r holds every block.
template <bool Reduce>
void ring_phase(Comm& comm, Tensor data, ReduceOp op, std::size_t segment_bytes, Tag tag) {
  const int n = comm.size();
  const int r = comm.rank();
  if (n == 1 || data.count == 0) return;
  const BlockSplit split{data.count, static_cast<std::size_t>(n)};
  const Segmentation seg(split.size(0), segment_bytes, data.dtype);
  const int next = (r + 1) % n;
  const int prev = (r - 1 + n) % n;
  const long long first_send = Reduce ? r - 1 : r;
  auto block = [&](long long b) {
    const std::size_t i = wrap(b, n);
    return data.slice(split.offset(i), split.size(i));
  };

  std::vector<Request> sends;
  sends.reserve(static_cast<std::size_t>(n) * seg.count);
  // Step 0: this rank's own block goes out whole, segment by segment.
  const Tensor first = block(first_send);
  for (std::size_t j = 0; j < seg.count; ++j) {
    const Tensor t = seg.of(first, j);
    if (t.count) sends.push_back(comm.isend(next, t.data, t.bytes(), tag));
  }
  // Every receive of the phase is posted up front, so that a segment finds
  // its destination waiting however early it arrives (process transports
  // then read it in place instead of buffering it). Each block is received
  // into once, at step s, and sent on only after that receive completed.
  std::vector<Request> receives;
  receives.reserve(static_cast<std::size_t>(n - 1) * seg.count);
  for (int s = 0; s < n - 1; ++s) {
    const Tensor incoming = block(first_send - s - 1);
    for (std::size_t j = 0; j < seg.count; ++j) {
      const Tensor t = seg.of(incoming, j);
      if (t.count == 0) continue;
      receives.push_back(Reduce ? comm.irecv_reduce(prev, t, op, tag)
                                : comm.irecv(prev, t.data, t.bytes(), tag));
    }
  }
  std::size_t next_receive = 0;
  for (int s = 0; s < n - 1; ++s) {
    const Tensor incoming = block(first_send - s - 1);
    for (std::size_t j = 0; j < seg.count; ++j) {
      const Tensor t = seg.of(incoming, j);
      if (t.count == 0) continue;
      comm.wait(receives[next_receive++]);
      if (s + 1 < n - 1) sends.push_back(comm.isend(next, t.data, t.bytes(), tag));
    }
  }
  comm.wait_all(sends);
}

Traffic ring_phase_traffic(int r, int n, std::size_t count, DType dtype,
                           std::size_t segment_bytes, bool reduce) {
  Traffic t;
  if (n == 1 || count == 0) return t;
  const BlockSplit split{count, static_cast<std::size_t>(n)};
  const Segmentation seg(split.size(0), segment_bytes, dtype);
  const long long first_send = reduce ? r - 1 : r;
  for (int s = 0; s < n - 1; ++s) {
    const std::size_t out = split.size(wrap(first_send - s, n));
    const std::size_t in = split.size(wrap(first_send - s - 1, n));
    t.bytes_sent += out * dtype_size(dtype);
    t.messages_sent += seg.nonempty(out);
    t.bytes_received += in * dtype_size(dtype);
    t.messages_received += seg.nonempty(in);
  }
  return t;
}

}  // namespace

void ring_reduce_scatter(Comm& comm, Tensor data, ReduceOp op, std::size_t segment_bytes,
                         Tag tag) {
  ring_phase<true>(comm, data, combining_op(op), segment_bytes, tag);
}

void ring_all_gather(Comm& comm, Tensor data, std::size_t segment_bytes, Tag tag) {
  ring_phase<false>(comm, data, ReduceOp::sum, segment_bytes, tag);
}

Traffic ring_reduce_scatter_traffic(int rank, int n, std::size_t count, DType dtype,
                                    std::size_t segment_bytes) {
  return ring_phase_traffic(rank, n, count, dtype, segment_bytes, true);
}

Traffic ring_all_gather_traffic(int rank, int n, std::size_t count, DType dtype,
                                std::size_t segment_bytes) {
  return ring_phase_traffic(rank, n, count, dtype, segment_bytes, false);
}

void RingScheme::allreduce(Comm& comm, Tensor data, ReduceOp op) {
  GRADEX_ENFORCE_EQ(comm.size(), workers(), "ring runs on the workers only");
  const std::size_t seg = options().segment_bytes;
  ring_reduce_scatter(comm, data, op, seg, /*tag=*/0);
  ring_all_gather(comm, data, seg, /*tag=*/1);
  finish_reduce(data, op, comm.size());
}

Traffic RingScheme::expected_traffic(int endpoint, std::size_t count, DType dtype) const {
  const std::size_t seg = options().segment_bytes;
  Traffic t = ring_reduce_scatter_traffic(endpoint, workers(), count, dtype, seg);
  t += ring_all_gather_traffic(endpoint, workers(), count, dtype, seg);
  return t;
}

double ring_phase_model_time(const Topology& topology, const std::vector<int>& members,
                             double bytes) {
  const std::size_t n = members.size();
  if (n <= 1) return 0;
  std::vector<std::pair<int, int>> hops;
  for (std::size_t i = 0; i < n; ++i) hops.emplace_back(members[i], members[(i + 1) % n]);
  return static_cast<double>(n - 1) * slowest_message(topology, hops, bytes / static_cast<double>(n));
}

double RingScheme::model_time(std::size_t bytes, const Topology& topology) const {
  std::vector<int> ring(static_cast<std::size_t>(workers()));
  for (int r = 0; r < workers(); ++r) ring[static_cast<std::size_t>(r)] = r;
  return 2 * ring_phase_model_time(topology, ring, static_cast<double>(bytes));
}

}  // namespace gradex
