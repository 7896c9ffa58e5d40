#include "allreduce/ring.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "allreduce/pipelined_broadcast.h"
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
//
// A phase is posted (step 0's sends and the first receives) apart from
// being driven (waiting each receive in order and forwarding it), so that
// the sliced all-reduce can post the next slice's reduce-scatter while it
// drives this slice's all-gather.
//
// Posting is bounded: receives are posted kStepsAhead steps ahead of the
// one being waited for, and a send older than kStepsAhead steps is waited
// for before the next is posted. A rank holds O(segments per block)
// requests whatever the ring's length, instead of all n-1 steps' (at 4,096
// simulated ranks that was 33 million open requests). A predecessor more
// than kStepsAhead steps ahead is rare (each step waits for the previous
// one along the ring); its segments then wait in the transport until their
// receive is posted.
class RingPhase {
 public:
  static constexpr int kStepsAhead = 4;

  // The ring of ranks 0..ranks-1 of comm (all of them when `ranks` is 0).
  RingPhase(Comm& comm, Tensor data, ReduceOp op, std::size_t segment_bytes, Tag tag,
            bool reduce, int ranks = 0)
      : comm_(comm), data_(data), op_(op), tag_(tag), reduce_(reduce),
        n_(ranks == 0 ? comm.size() : ranks),
        split_{data.count, static_cast<std::size_t>(n_)},
        seg_(split_.size(0), segment_bytes, data.dtype),
        next_((comm.rank() + 1) % n_), prev_((comm.rank() - 1 + n_) % n_),
        first_send_(reduce ? comm.rank() - 1 : comm.rank()) {
    GRADEX_ENFORCE(n_ >= 1 && n_ <= comm.size() && comm.rank() < n_, "rank ", comm.rank(),
                   " in a ring of ranks 0..", n_ - 1, " of ", comm.size());
    if (n_ == 1 || data.count == 0) return;
    // Step 0: this rank's own block goes out whole, segment by segment.
    const Tensor first = block(first_send_);
    for (std::size_t j = 0; j < seg_.count; ++j) {
      const Tensor t = seg_.of(first, j);
      if (t.count) sends_.push_back(comm.isend(next_, t.data, t.bytes(), tag));
    }
    // Each block is received into once, at step s, and sent on only after
    // that receive completed.
    for (int s = 0; s < std::min(n_ - 1, kStepsAhead); ++s) post_receives(s);
  }

  // Waits for every receive in order, forwarding each block but the last
  // as it lands, then for every send.
  void finish() {
    while (next_receive()) {
      comm_.wait(receives_.front());
      on_received();
    }
    finish_sends();
  }

  // Driven a receive at a time (several rings at once, ring_allreduce_together):
  // whether a receive is still to come, its request then at the front
  // (posting the receives of the steps passed on the way).
  bool next_receive() {
    if (n_ == 1 || data_.count == 0) return false;
    while (step_ < n_ - 1) {
      if (segment_ < seg_.count) {
        if (incoming(step_, segment_).count > 0) return true;
        ++segment_;
        continue;
      }
      if (step_ + kStepsAhead < n_ - 1) post_receives(step_ + kStepsAhead);
      ++step_;
      segment_ = 0;
    }
    return false;
  }
  Request& front_receive() { return receives_.front(); }
  // Driven with other rings, a rank must not block on one ring's send
  // window while the others have segments to forward: the oldest send,
  // when the next receive will be forwarded and the window is full (wait
  // for it, then sent_oldest()); else nullptr.
  Request* full_window() {
    if (step_ + 1 < n_ - 1 && sends_.size() >= send_window()) return &sends_.front();
    return nullptr;
  }
  void sent_oldest() { sends_.pop_front(); }
  // The front receive has completed: forwards it unless it ends the phase.
  void on_received() {
    const Tensor t = incoming(step_, segment_);
    receives_.pop_front();
    if (step_ + 1 < n_ - 1) {
      while (sends_.size() >= send_window()) {
        comm_.wait(sends_.front());
        sends_.pop_front();
      }
      sends_.push_back(comm_.isend(next_, t.data, t.bytes(), tag_));
    }
    ++segment_;
  }
  void finish_sends() {
    for (Request& r : sends_) comm_.wait(r);
    sends_.clear();
  }
  Comm& comm() { return comm_; }

 private:
  Tensor block(long long b) const {
    const std::size_t i = wrap(b, n_);
    return data_.slice(split_.offset(i), split_.size(i));
  }
  std::size_t send_window() const { return static_cast<std::size_t>(kStepsAhead) * seg_.count; }
  // Segment j of the block received at step s.
  Tensor incoming(int s, std::size_t j) const { return seg_.of(block(first_send_ - s - 1), j); }
  // Posts the receives of step s's block, a segment each (none for an
  // empty segment).
  void post_receives(int s) {
    for (std::size_t j = 0; j < seg_.count; ++j) {
      const Tensor t = incoming(s, j);
      if (t.count == 0) continue;
      receives_.push_back(reduce_ ? comm_.irecv_reduce(prev_, t, op_, tag_)
                                  : comm_.irecv(prev_, t.data, t.bytes(), tag_));
    }
  }

  Comm& comm_;
  Tensor data_;
  ReduceOp op_;
  Tag tag_;
  bool reduce_;
  int n_;
  BlockSplit split_;
  Segmentation seg_;
  int next_;
  int prev_;
  long long first_send_;
  std::deque<Request> sends_;
  std::deque<Request> receives_;
  int step_ = 0;             // of the next receive to be waited for
  std::size_t segment_ = 0;  // its segment within the step's block
};

// Drives the phases together: whichever ring's next receive lands first is
// forwarded first. Every phase's comm is a sub-group of one parent, so any
// of them can wait on all their requests.
void drive_together(std::vector<RingPhase>& phases) {
  struct Waiting {
    RingPhase* phase;
    Request* slot;  // where the request came from, to go back to
    bool send;      // the oldest send of a full window, else the next receive
  };
  std::vector<Waiting> live;
  std::vector<Request> requests;
  while (true) {
    live.clear();
    requests.clear();
    for (RingPhase& p : phases) {
      if (!p.next_receive()) continue;
      Request* send = p.full_window();
      Request* slot = send ? send : &p.front_receive();
      live.push_back({&p, slot, send != nullptr});
      requests.push_back(std::move(*slot));
    }
    if (live.empty()) break;
    const std::size_t done = live.front().phase->comm().wait_any(requests);
    // The others go back, still pending; the one that completed is taken.
    for (std::size_t i = 0; i < live.size(); ++i) {
      if (i != done) *live[i].slot = std::move(requests[i]);
    }
    if (live[done].send) {
      live[done].phase->sent_oldest();
    } else {
      live[done].phase->on_received();
    }
  }
  for (RingPhase& p : phases) p.finish_sends();
}

// The slices of SchemeOptions::slice_bytes over a buffer of `total`
// elements: at least one (possibly empty), the last one possibly shorter.
struct RingSlices {
  std::size_t per_slice;  // elements
  std::size_t count;      // slices
  std::size_t total;      // elements in the buffer

  RingSlices(std::size_t total_elements, std::size_t slice_bytes, DType dtype)
      : per_slice(slice_bytes == 0
                      ? std::max<std::size_t>(1, total_elements)
                      : std::max<std::size_t>(1, slice_bytes / dtype_size(dtype))),
        count(std::max<std::size_t>(1, (total_elements + per_slice - 1) / per_slice)),
        total(total_elements) {}

  std::size_t size(std::size_t k) const {  // elements of slice k
    return std::min(total, (k + 1) * per_slice) - std::min(total, k * per_slice);
  }
  Tensor of(const Tensor& data, std::size_t k) const {  // slice k of `data`
    return data.slice(std::min(total, k * per_slice), size(k));
  }
};

// Over its n-1 steps a rank sends every block but one, first_send + 1 (the
// block it would send at step n-1), and receives every block but its
// first_send: counted in closed form, so that checking every rank of a
// large ring costs O(n), not O(n^2).
Traffic ring_phase_traffic(int r, int n, std::size_t count, DType dtype,
                           std::size_t segment_bytes, bool reduce) {
  Traffic t;
  if (n == 1 || count == 0) return t;
  const BlockSplit split{count, static_cast<std::size_t>(n)};
  const Segmentation seg(split.size(0), segment_bytes, dtype);
  const long long first_send = reduce ? r - 1 : r;
  // Blocks take two sizes: count % n of one element more.
  const std::size_t longer = count % static_cast<std::size_t>(n);
  const std::size_t all_messages =
      longer * seg.nonempty(split.size(0)) +
      (static_cast<std::size_t>(n) - longer) * seg.nonempty(count / static_cast<std::size_t>(n));
  const std::size_t unsent = split.size(wrap(first_send + 1, n));
  const std::size_t unreceived = split.size(wrap(first_send, n));
  t.bytes_sent = (count - unsent) * dtype_size(dtype);
  t.messages_sent = all_messages - seg.nonempty(unsent);
  t.bytes_received = (count - unreceived) * dtype_size(dtype);
  t.messages_received = all_messages - seg.nonempty(unreceived);
  return t;
}

}  // namespace

void ring_reduce_scatter(Comm& comm, Tensor data, ReduceOp op, std::size_t segment_bytes,
                         Tag tag, int ranks) {
  RingPhase(comm, data, combining_op(op), segment_bytes, tag, /*reduce=*/true, ranks).finish();
}

void ring_all_gather(Comm& comm, Tensor data, std::size_t segment_bytes, Tag tag, int ranks) {
  RingPhase(comm, data, ReduceOp::sum, segment_bytes, tag, /*reduce=*/false, ranks).finish();
}

void ring_allreduce_together(std::span<Comm* const> rings, std::span<const Tensor> parts,
                             ReduceOp op, std::size_t segment_bytes) {
  GRADEX_ENFORCE_EQ(rings.size(), parts.size(), "one part of the buffer per ring");
  const ReduceOp combine = combining_op(op);
  for (const bool reduce : {true, false}) {
    std::vector<RingPhase> phases;
    phases.reserve(rings.size());
    for (std::size_t k = 0; k < rings.size(); ++k) {
      phases.emplace_back(*rings[k], parts[k], combine, segment_bytes, /*tag=*/reduce ? 0 : 1,
                          reduce);
    }
    drive_together(phases);
  }
}

void ring_broadcast(Comm& comm, Tensor data, int root, std::size_t segment_bytes, Tag tag,
                    int ranks) {
  if (ranks == 1 || comm.rank() >= ranks) return;
  pipelined_broadcast(comm, data, chain_links(comm.rank(), ranks, root), segment_bytes, tag);
}

Traffic ring_broadcast_traffic(int rank, int n, int root, std::size_t count, DType dtype,
                               std::size_t segment_bytes) {
  if (n == 1) return {};
  return pipelined_broadcast_traffic(chain_links(rank, n, root), count, dtype, segment_bytes);
}

Traffic ring_reduce_scatter_traffic(int rank, int n, std::size_t count, DType dtype,
                                    std::size_t segment_bytes) {
  return ring_phase_traffic(rank, n, count, dtype, segment_bytes, true);
}

Traffic ring_all_gather_traffic(int rank, int n, std::size_t count, DType dtype,
                                std::size_t segment_bytes) {
  return ring_phase_traffic(rank, n, count, dtype, segment_bytes, false);
}

// Slice k+1's reduce-scatter is posted before slice k's all-gather is
// driven, so the next slice's first blocks travel while this one is
// gathered (in the simulator that saves up to two of each slice's 2(n-1)
// latencies; tests/sim_model_test.cpp).
void RingScheme::allreduce(Comm& comm, Tensor data, ReduceOp op) {
  GRADEX_ENFORCE_EQ(comm.size(), workers(), "ring runs on the workers only");
  ring_allreduce(comm, data, op, options().segment_bytes, options().slice_bytes);
  finish_reduce(data, op, comm.size());
}

void ring_allreduce(Comm& comm, Tensor data, ReduceOp op, std::size_t seg,
                    std::size_t slice_bytes) {
  const RingSlices slices(data.count, slice_bytes, data.dtype);
  const ReduceOp combine = combining_op(op);
  std::optional<RingPhase> scatter;
  scatter.emplace(comm, slices.of(data, 0), combine, seg, /*tag=*/0, /*reduce=*/true);
  for (std::size_t k = 0; k < slices.count; ++k) {
    scatter->finish();
    RingPhase gather(comm, slices.of(data, k), combine, seg, /*tag=*/1, /*reduce=*/false);
    if (k + 1 < slices.count) {
      scatter.emplace(comm, slices.of(data, k + 1), combine, seg, /*tag=*/0, /*reduce=*/true);
    }
    gather.finish();
  }
}

void RingScheme::reduce_scatter(Comm& comm, Tensor data, ReduceOp op) {
  GRADEX_ENFORCE_EQ(comm.size(), workers(), "ring runs on the workers only");
  ring_reduce_scatter(comm, data, op, options().segment_bytes, /*tag=*/0);
  const BlockSplit split{data.count, static_cast<std::size_t>(comm.size())};
  const auto mine = static_cast<std::size_t>(comm.rank());
  finish_reduce(data.slice(split.offset(mine), split.size(mine)), op, comm.size());
}

void RingScheme::all_gather(Comm& comm, Tensor data) {
  GRADEX_ENFORCE_EQ(comm.size(), workers(), "ring runs on the workers only");
  ring_all_gather(comm, data, options().segment_bytes, /*tag=*/1);
}

void RingScheme::broadcast(Comm& comm, Tensor data) {
  GRADEX_ENFORCE_EQ(comm.size(), workers(), "ring runs on the workers only");
  ring_broadcast(comm, data, kBroadcastRoot, options().segment_bytes, /*tag=*/2, comm.size());
}

Traffic RingScheme::collective_traffic(Collective c, int endpoint, std::size_t count,
                                       DType dtype) const {
  const std::size_t seg = options().segment_bytes;
  switch (c) {
    case Collective::all_reduce: return expected_traffic(endpoint, count, dtype);
    case Collective::reduce_scatter:
      return ring_reduce_scatter_traffic(endpoint, workers(), count, dtype, seg);
    case Collective::all_gather:
      return ring_all_gather_traffic(endpoint, workers(), count, dtype, seg);
    case Collective::broadcast:
      return ring_broadcast_traffic(endpoint, workers(), kBroadcastRoot, count, dtype, seg);
  }
  return Scheme::collective_traffic(c, endpoint, count, dtype);
}

double RingScheme::collective_model_time(Collective c, std::size_t bytes,
                                         const Topology& topology) const {
  const int n = workers();
  std::vector<int> ring(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) ring[static_cast<std::size_t>(r)] = r;
  switch (c) {
    case Collective::all_reduce: return model_time(bytes, topology);
    case Collective::reduce_scatter:
    case Collective::all_gather:
      return ring_phase_model_time(topology, ring, static_cast<double>(bytes), options().segment_bytes);
    case Collective::broadcast:
      return pipelined_broadcast_model_time(
          topology, n, [n](int r) { return chain_links(r, n, kBroadcastRoot); }, bytes,
          options().segment_bytes);
  }
  return Scheme::collective_model_time(c, bytes, topology);
}

Traffic RingScheme::expected_traffic(int endpoint, std::size_t count, DType dtype) const {
  const std::size_t seg = options().segment_bytes;
  const RingSlices slices(count, options().slice_bytes, dtype);
  Traffic t;
  for (std::size_t k = 0; k < slices.count; ++k) {
    t += ring_reduce_scatter_traffic(endpoint, workers(), slices.size(k), dtype, seg);
    t += ring_all_gather_traffic(endpoint, workers(), slices.size(k), dtype, seg);
  }
  return t;
}

int ring_segments(double block_bytes, std::size_t segment_bytes) {
  if (segment_bytes == 0 || block_bytes <= static_cast<double>(segment_bytes)) return 1;
  // Bounded where an int holds it (a block of a byte a segment, terabytes long).
  constexpr double kMost = 1 << 30;
  return static_cast<int>(std::min(kMost, std::ceil(block_bytes / static_cast<double>(segment_bytes))));
}

double ring_phase_model_time(const Topology& topology, const std::vector<int>& members,
                             double bytes, std::size_t segment_bytes) {
  const auto n = static_cast<int>(members.size());
  if (n <= 1) return 0;
  return rings_time(topology, {members}, bytes / n, n - 1, ring_segments(bytes / n, segment_bytes));
}

double ring_allreduce_model_time(const Topology& topology, const std::vector<int>& members,
                                 double bytes, std::size_t segment_bytes, double share) {
  const auto n = static_cast<int>(members.size());
  if (n <= 1) return 0;
  const double block = bytes / n;
  // A block in one message: both phases as one chain, the all-gather's
  // first step forwarding what the reduce-scatter's last step summed.
  // In segments the all-gather starts once the reduce-scatter has ended
  // (RingPhase::finish), each phase a pipeline of its own.
  const int segments = ring_segments(block, segment_bytes);
  if (segments == 1) return rings_time(topology, {members}, block, 2 * (n - 1), 1, 1, share);
  return rings_time(topology, {members}, block, n - 1, segments, /*phases=*/2, share);
}

double RingScheme::model_time(std::size_t bytes, const Topology& topology) const {
  std::vector<int> ring(static_cast<std::size_t>(workers()));
  for (int r = 0; r < workers(); ++r) ring[static_cast<std::size_t>(r)] = r;
  const std::size_t seg = options().segment_bytes;
  auto whole = [&](std::size_t b) {
    return ring_allreduce_model_time(topology, ring, static_cast<double>(b), seg);
  };
  const std::size_t slice = options().slice_bytes;
  if (slice == 0 || bytes <= slice) return whole(bytes);
  // Full slices, then a shorter last one (in bytes: the model takes no dtype).
  const std::size_t rest = bytes % slice;
  return static_cast<double>(bytes / slice) * whole(slice) + (rest ? whole(rest) : 0.0);
}

}  // namespace gradex
