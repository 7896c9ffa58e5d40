#include "allreduce/recursive_doubling.h"

#include <cstring>
#include <vector>

#include "allreduce/fold.h"
#include "common/cost_model.h"
#include "common/device_memory.h"
#include "common/errors.h"

namespace gradex {

namespace {

constexpr Tag kFoldTag = 0;    // extra rank -> partner: the whole input
constexpr Tag kSwapTag = 1;    // the core's exchanges
constexpr Tag kUnfoldTag = 2;  // partner -> extra rank: the whole result

int steps_of(int p) {
  int k = 0;
  while ((1 << k) < p) ++k;
  return k;
}

}  // namespace

// The fold and the unfold as allreduce/fold.h schedules them; between them,
// on core rank v:
//   core:   at distance d = 1, 2, ..., p/2, v sends its whole buffer to
//           v ^ d and combines v ^ d's into it. After the step at d, v
//           holds the sum over the 2d ranks that agree with it above bit
//           d; after the last, over all. Both partners add the same two
//           values, so every rank ends bit-identical (a + b == b + a).
//           What goes out is a copy taken before the combine: the partner
//           may read it while ours is being overwritten.
void RecursiveDoublingScheme::allreduce(Comm& comm, Tensor data, ReduceOp op) {
  GRADEX_ENFORCE_EQ(comm.size(), workers(), "recursive_doubling runs on the workers only");
  const ReduceOp combine = combining_op(op);
  const Fold fold(comm.size());
  if (comm.size() > 1 && data.count > 0) {
    run_folded(comm, {data, true, data}, combine, fold, kFoldTag, kUnfoldTag, [&](int v) {
      const bool phantom = comm.phantom_payloads();
      std::vector<std::byte> outgoing(phantom ? 0 : data.bytes());
      for (int d = 1; d < fold.p; d *= 2) {
        const int partner = fold.world(v ^ d);
        if (!phantom) copy_bytes(outgoing.data(), data.data, data.bytes());
        Request out = comm.isend(partner, phantom ? nullptr : outgoing.data(), data.bytes(),
                                 kSwapTag);
        Request in = comm.irecv_reduce(partner, data, combine, kSwapTag);
        comm.wait(in);
        comm.wait(out);
      }
    });
  }
  finish_reduce(data, op, comm.size());
}

Traffic RecursiveDoublingScheme::expected_traffic(int endpoint, std::size_t count,
                                                  DType dtype) const {
  Traffic t;
  const int n = workers();
  if (n == 1 || count == 0) return t;
  const std::uint64_t bytes = count * dtype_size(dtype);
  const Fold fold(n);
  // The fold and the unfold move the whole buffer once each way; a core
  // rank swaps it once per step.
  const int messages = (endpoint < 2 * fold.rem ? 1 : 0) +
                       (fold.core(endpoint) >= 0 ? steps_of(fold.p) : 0);
  t.bytes_sent = t.bytes_received = bytes * static_cast<std::uint64_t>(messages);
  t.messages_sent = t.messages_received = static_cast<std::uint64_t>(messages);
  return t;
}

// Each step moves S each way between partners (both directions at once,
// each on its own ports); the slowest partner pair paces it.
double RecursiveDoublingScheme::model_time(std::size_t bytes, const Topology& topology) const {
  const int n = workers();
  if (n <= 1 || bytes == 0) return 0;
  const Fold fold(n);
  const double s = static_cast<double>(bytes);
  double total = 0;
  for (int d = 1; d < fold.p; d *= 2) total += slowest_message(topology, fold.pairs_at(d), s);
  return total + fold_model_time(fold, topology, s, s);
}

}  // namespace gradex
