// Recursive halving-doubling all-reduce (Rabenseifner): a reduce-scatter by
// recursive halving, then an all-gather by recursive doubling. Each rank
// sends 2(p-1)/p of the buffer, like the ring, but in 2 log2(p) messages
// instead of 2(n-1): the latency term of the ring without its bandwidth
// cost. World sizes that are not powers of two first fold the extra ranks
// into partners (p = largest power of two <= n).
#pragma once

#include "common/comm.h"
#include "common/scheme.h"

namespace gradex {

class HalvingDoublingScheme final : public Scheme {
 public:
  using Scheme::Scheme;
  void allreduce(Comm& comm, Tensor data, ReduceOp op) override;
  Traffic expected_traffic(int endpoint, std::size_t count, DType dtype) const override;
  // 2 log2(p) a + 2 (p-1)/p S / B on the core of p ranks, plus a fold and
  // an unfold of the whole buffer, 2 (a + S / B), when n is not p.
  double model_time(std::size_t bytes, const Topology& topology) const override;
};

}  // namespace gradex
