// Recursive doubling all-reduce: log2(p) steps in which partners at
// distance 1, 2, 4, ... swap their whole buffers and both combine. The
// fewest messages of any all-reduce (MPI libraries' choice for small
// messages) at the price of log2(p) S bytes per rank instead of the ring's
// 2 (n-1)/n S. World sizes that are not powers of two fold the extra ranks
// into partners first (allreduce/fold.h).
#pragma once

#include "common/comm.h"
#include "common/scheme.h"

namespace gradex {

class RecursiveDoublingScheme final : public Scheme {
 public:
  using Scheme::Scheme;
  void allreduce(Comm& comm, Tensor data, ReduceOp op) override;
  Traffic expected_traffic(int endpoint, std::size_t count, DType dtype) const override;
  // log2(p) (a + S / B) on the core of p ranks, plus a fold and an unfold
  // of the whole buffer, 2 (a + S / B), when n is not p.
  double model_time(std::size_t bytes, const Topology& topology) const override;
};

}  // namespace gradex
