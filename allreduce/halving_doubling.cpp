#include "allreduce/halving_doubling.h"

#include <vector>

#include "allreduce/fold.h"
#include "common/cost_model.h"
#include "common/errors.h"

namespace gradex {

namespace {

// One tag per phase: a core partner is met once while halving and once
// while doubling, and a message must only ever match its own phase.
constexpr Tag kFoldTag = 0;    // extra rank -> partner: the whole input
constexpr Tag kHalveTag = 1;   // reduce-scatter steps
constexpr Tag kDoubleTag = 2;  // all-gather steps
constexpr Tag kUnfoldTag = 3;  // partner -> extra rank: the whole result

// One halving step of core rank v: v and its partner v ^ distance share a
// range, cut in two (BlockSplit: the first half takes the odd element).
// The rank whose `distance` bit is clear keeps the lower half.
struct Step {
  int distance;
  std::size_t keep_offset, keep_count;  // reduced here; v's range afterwards
  std::size_t give_offset, give_count;  // reduced at the partner
};

// Steps at distances p/2, p/4, ..., 1: the top bit picks the half first,
// so after the last step core rank v holds block v of the buffer cut into
// p blocks in order. Example, p = 4, buffer [A B C D]:
//   distance 2: ranks 0,1 keep [A B] and send [C D] to 2,3 (and back)
//   distance 1: rank 0 keeps A, sends B to 1; rank 2 keeps C, sends D to 3
std::vector<Step> halving_steps(int v, int p, std::size_t count) {
  std::vector<Step> steps;
  std::size_t offset = 0;
  std::size_t n = count;
  for (int d = p / 2; d >= 1; d /= 2) {
    const BlockSplit halves{n, 2};
    const std::size_t keep = (v & d) == 0 ? 0 : 1;
    steps.push_back({d, offset + halves.offset(keep), halves.size(keep),
                     offset + halves.offset(1 - keep), halves.size(1 - keep)});
    offset = steps.back().keep_offset;
    n = steps.back().keep_count;
  }
  return steps;
}

// The power-of-two core on core rank v. Both partners of a step compute
// the same split, so a half that is empty (count < p) is skipped on both
// sides.
//
//   reduce-scatter, distance p/2 .. 1: send the give half to the partner,
//     receive-reduce the partner's copy of the keep half. After the step
//     the keep half holds the sum over the 2*distance ranks sharing it.
//   all-gather, distance 1 .. p/2 (steps in reverse): send the (now fully
//     reduced) keep half to the partner, receive its keep half into our
//     give half: together they are the range before that halving step.
void core(Comm& comm, const Tensor& data, ReduceOp combine, const Fold& fold, int v) {
  const std::vector<Step> steps = halving_steps(v, fold.p, data.count);
  const std::size_t elem = dtype_size(data.dtype);
  auto range = [&](std::size_t offset, std::size_t n) { return data.slice(offset, n); };
  for (const Step& s : steps) {
    const int partner = fold.world(v ^ s.distance);
    const Tensor give = range(s.give_offset, s.give_count);
    const Tensor keep = range(s.keep_offset, s.keep_count);
    Request out, in;
    if (give.count) out = comm.isend(partner, give.data, give.count * elem, kHalveTag);
    if (keep.count) in = comm.irecv_reduce(partner, keep, combine, kHalveTag);
    comm.wait(in);
    comm.wait(out);
  }
  for (auto s = steps.rbegin(); s != steps.rend(); ++s) {
    const int partner = fold.world(v ^ s->distance);
    const Tensor give = range(s->give_offset, s->give_count);
    const Tensor keep = range(s->keep_offset, s->keep_count);
    Request out, in;
    if (keep.count) out = comm.isend(partner, keep.data, keep.count * elem, kDoubleTag);
    if (give.count) in = comm.irecv(partner, give.data, give.count * elem, kDoubleTag);
    comm.wait(in);
    comm.wait(out);
  }
}

}  // namespace

// The fold, the core and the unfold as allreduce/fold.h schedules them.
void HalvingDoublingScheme::allreduce(Comm& comm, Tensor data, ReduceOp op) {
  GRADEX_ENFORCE_EQ(comm.size(), workers(), "halving_doubling runs on the workers only");
  const ReduceOp combine = combining_op(op);
  const Fold fold(comm.size());
  if (comm.size() > 1 && data.count > 0) {
    run_folded(comm, data, combine, fold, kFoldTag, kUnfoldTag,
               [&](int v) { core(comm, data, combine, fold, v); });
  }
  finish_reduce(data, op, comm.size());
}

Traffic HalvingDoublingScheme::expected_traffic(int endpoint, std::size_t count,
                                                DType dtype) const {
  Traffic t;
  const int n = workers();
  if (n == 1 || count == 0) return t;
  const std::size_t elem = dtype_size(dtype);
  const Fold fold(n);
  const int v = fold.core(endpoint);
  auto send = [&](std::size_t elems) {
    if (elems == 0) return;
    t.bytes_sent += elems * elem;
    t.messages_sent += 1;
  };
  auto receive = [&](std::size_t elems) {
    if (elems == 0) return;
    t.bytes_received += elems * elem;
    t.messages_received += 1;
  };
  // The fold and the unfold move the whole buffer once each way.
  if (endpoint < 2 * fold.rem) {
    send(count);
    receive(count);
  }
  if (v < 0) return t;
  for (const Step& s : halving_steps(v, fold.p, count)) {
    send(s.give_count);  // halving
    receive(s.keep_count);
    send(s.keep_count);  // doubling
    receive(s.give_count);
  }
  return t;
}

// Step by step as scheduled above: halving at distances p/2 .. 1 moves
// S/2, S/4, ... S/p each way between partners (both directions at once,
// each on its own ports), doubling retraces it; the slowest partner pair
// of a step paces it.
double HalvingDoublingScheme::model_time(std::size_t bytes, const Topology& topology) const {
  const int n = workers();
  if (n <= 1 || bytes == 0) return 0;
  const Fold fold(n);
  double total = 0;
  double part = static_cast<double>(bytes);
  for (int d = fold.p / 2; d >= 1; d /= 2) {
    part /= 2;
    total += 2 * slowest_message(topology, fold.pairs_at(d), part);  // halving + its doubling
  }
  return total + fold_model_time(fold, topology, static_cast<double>(bytes));
}

}  // namespace gradex
