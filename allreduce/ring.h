// Ring all-reduce: a reduce-scatter followed by an all-gather around the
// ring 0 -> 1 -> ... -> n-1 -> 0, each 2(n-1) steps moving 1/n of the
// buffer, so every rank sends 2(n-1)/n of it: the bandwidth-optimal bound.
#pragma once

#include <vector>

#include "common/comm.h"
#include "common/scheme.h"

namespace gradex {

// The buffer is split into n blocks (BlockSplit); on return rank r holds
// block r reduced over all ranks (other blocks hold partial sums).
void ring_reduce_scatter(Comm& comm, Tensor data, ReduceOp op, std::size_t segment_bytes,
                         Tag tag);
// Rank r contributes block r; on return every rank holds every block.
void ring_all_gather(Comm& comm, Tensor data, std::size_t segment_bytes, Tag tag);
// Link traffic of rank r for the two functions above on `count` elements.
Traffic ring_reduce_scatter_traffic(int rank, int n, std::size_t count, DType dtype,
                                    std::size_t segment_bytes);
Traffic ring_all_gather_traffic(int rank, int n, std::size_t count, DType dtype,
                                std::size_t segment_bytes);

// Cost model of one ring phase (reduce-scatter or all-gather) of `bytes`
// over endpoints `members` of `topology`, in ring order: n-1 steps, each
// moving a block of bytes/n from every member to the next at once. A rank
// forwards only what it has received, so the slowest hop paces every step.
double ring_phase_model_time(const Topology& topology, const std::vector<int>& members,
                             double bytes);

class RingScheme final : public Scheme {
 public:
  using Scheme::Scheme;
  void allreduce(Comm& comm, Tensor data, ReduceOp op) override;
  Traffic expected_traffic(int endpoint, std::size_t count, DType dtype) const override;
  // 2(n-1) (a + S / (n B)) over the slowest hop: docs/architecture.md's
  // 2(n-1) a + 2 (n-1)/n S / B; summed over the slices when sliced.
  double model_time(std::size_t bytes, const Topology& topology) const override;
};

}  // namespace gradex
