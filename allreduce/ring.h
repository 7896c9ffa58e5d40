// Ring all-reduce: a reduce-scatter followed by an all-gather around the
// ring 0 -> 1 -> ... -> n-1 -> 0, each 2(n-1) steps moving 1/n of the
// buffer, so every rank sends 2(n-1)/n of it: the bandwidth-optimal bound.
#pragma once

#include <span>
#include <vector>

#include "common/comm.h"
#include "common/scheme.h"

namespace gradex {

// The buffer is split into n blocks (BlockSplit); on return rank r holds
// block r reduced over all ranks (other blocks hold partial sums). Over
// ranks 0..ranks-1 of comm only, if `ranks` is given (the others take no
// part and must not call).
void ring_reduce_scatter(Comm& comm, Tensor data, ReduceOp op, std::size_t segment_bytes,
                         Tag tag, int ranks = 0);
// Rank r contributes block r; on return every rank holds every block.
void ring_all_gather(Comm& comm, Tensor data, std::size_t segment_bytes, Tag tag,
                     int ranks = 0);
// RingScheme's all-reduce on every rank of comm: a reduce-scatter then an
// all-gather per slice of `slice_bytes` (0: one slice), the next slice's
// reduce-scatter posted while this one's all-gather runs. An average is
// left to the caller to finish (finish_reduce).
void ring_allreduce(Comm& comm, Tensor data, ReduceOp op, std::size_t segment_bytes,
                    std::size_t slice_bytes);
// Several ring all-reduces at once, ring k over group rings[k] (each a
// sub-group of one parent, in its ring order) on its own part parts[k] of
// the buffer: NCCL's channels. Each rank drives its rings together,
// forwarding whichever ring's segment lands first; every ring's
// reduce-scatter ends before the all-gathers start. An average is left
// to the caller to finish (finish_reduce), as a scheme's phases do.
void ring_allreduce_together(std::span<Comm* const> rings, std::span<const Tensor> parts,
                             ReduceOp op, std::size_t segment_bytes);
// Rank `root`'s buffer to ranks 0..ranks-1 of comm (the others take no
// part), as a pipelined chain root -> root+1 -> ... -> root-1: each segment
// is forwarded as soon as it has arrived, so k segments take n-2+k segment
// times and every rank but the last sends the buffer once (NCCL's ring
// broadcast).
void ring_broadcast(Comm& comm, Tensor data, int root, std::size_t segment_bytes, Tag tag,
                    int ranks);
// Link traffic of rank r for the functions above on `count` elements.
Traffic ring_reduce_scatter_traffic(int rank, int n, std::size_t count, DType dtype,
                                    std::size_t segment_bytes);
Traffic ring_all_gather_traffic(int rank, int n, std::size_t count, DType dtype,
                                std::size_t segment_bytes);
Traffic ring_broadcast_traffic(int rank, int n, int root, std::size_t count, DType dtype,
                               std::size_t segment_bytes);

// Cost model of one ring phase (reduce-scatter or all-gather) of `bytes`
// over endpoints `members` of `topology`, in ring order: n-1 steps, each
// moving a block of bytes/n from every member to the next at once, in
// segments of `segment_bytes` (rings_time). A rank forwards only what it
// has received, so the slowest hop paces every step.
double ring_phase_model_time(const Topology& topology, const std::vector<int>& members,
                             double bytes, std::size_t segment_bytes);
// Cost model of a ring all-reduce of `bytes` (unsliced) over `members`, in
// segments of `segment_bytes`: its reduce-scatter, then its all-gather,
// with `share` of each port's rate (rings_time).
double ring_allreduce_model_time(const Topology& topology, const std::vector<int>& members,
                                 double bytes, std::size_t segment_bytes, double share = 1);
// How many segments of `segment_bytes` a block of `block_bytes` moves in
// (one for a block no larger than a segment).
int ring_segments(double block_bytes, std::size_t segment_bytes);

// Provides every collective: its reduce-scatter and all-gather are the
// all-reduce's two phases on their own, its broadcast the chain above.
class RingScheme final : public Scheme {
 public:
  using Scheme::Scheme;
  void allreduce(Comm& comm, Tensor data, ReduceOp op) override;
  bool provides(Collective) const override { return true; }
  bool segmented() const override { return true; }
  // Its two phases are; its broadcast (a chain from one root) is not.
  bool symmetric(Collective c) const override { return c != Collective::broadcast; }
  void reduce_scatter(Comm& comm, Tensor data, ReduceOp op) override;
  void all_gather(Comm& comm, Tensor data) override;
  void broadcast(Comm& comm, Tensor data) override;
  Traffic expected_traffic(int endpoint, std::size_t count, DType dtype) const override;
  // 2(n-1) (a + S / (n B)) over the slowest hop: docs/architecture.md's
  // 2(n-1) a + 2 (n-1)/n S / B; summed over the slices when sliced.
  double model_time(std::size_t bytes, const Topology& topology) const override;
  Traffic collective_traffic(Collective c, int endpoint, std::size_t count,
                             DType dtype) const override;
  // Reduce-scatter and all-gather: one phase, (n-1) (a + S / (n B)).
  // Broadcast: (n-2+k) (a + s / B) for k segments of s bytes.
  double collective_model_time(Collective c, std::size_t bytes,
                               const Topology& topology) const override;
};

}  // namespace gradex
