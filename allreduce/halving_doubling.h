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

// Its two phases are also the reduce-scatter (recursive halving) and the
// all-gather (recursive doubling) on their own, with cuts at block
// boundaries so that rank r ends with block r (MPICH's algorithms for
// those collectives). There the fold moves the whole buffer one way and a
// block the other.
class HalvingDoublingScheme final : public Scheme {
 public:
  using Scheme::Scheme;
  void allreduce(Comm& comm, Tensor data, ReduceOp op) override;
  bool provides(Collective c) const override { return c != Collective::broadcast; }
  void reduce_scatter(Comm& comm, Tensor data, ReduceOp op) override;
  void all_gather(Comm& comm, Tensor data) override;
  Traffic expected_traffic(int endpoint, std::size_t count, DType dtype) const override;
  Traffic collective_traffic(Collective c, int endpoint, std::size_t count,
                             DType dtype) const override;
  // 2 log2(p) a + 2 (p-1)/p S / B on the core of p ranks, plus a fold and
  // an unfold of the whole buffer, 2 (a + S / B), when n is not p; one
  // phase of it for reduce-scatter and all-gather.
  double model_time(std::size_t bytes, const Topology& topology) const override;
  double collective_model_time(Collective c, std::size_t bytes,
                               const Topology& topology) const override;

 private:
  void run_collective(Comm& comm, Collective c, Tensor data, ReduceOp op) const;
};

}  // namespace gradex
