#include "allreduce/halving_doubling.h"

#include <algorithm>
#include <functional>
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
// range, cut in two; the rank whose `distance` bit is clear keeps the
// lower part.
struct Step {
  int distance;
  std::size_t keep_offset, keep_count;  // reduced here; v's range afterwards
  std::size_t give_offset, give_count;  // reduced at the partner
};

// Where a halving step cuts: the element count of the lower part of the
// range [offset, offset + n) shared by core ranks [v0, v0 + k).
using LowerPart = std::function<std::size_t(int v0, int k, std::size_t offset, std::size_t n)>;

// The all-reduce's cut: halves that differ by at most one element (the
// first takes the odd one), whatever the ranks' blocks.
std::size_t even_halves(int, int, std::size_t, std::size_t n) { return BlockSplit{n, 2}.size(0); }

// The reduce-scatter's and all-gather's cut: at block boundaries, so that
// after the last step core rank v holds exactly the blocks (BlockSplit of
// the buffer into n) of the world ranks it stands for: its own, and its
// folded partner's when it has one (those two are adjacent, so every core
// rank's blocks are one range, in core order).
LowerPart at_blocks(const Fold& fold, int n, std::size_t count) {
  return [fold, n, count](int v0, int k, std::size_t offset, std::size_t) {
    const int v = v0 + k / 2;  // first core rank of the upper part
    const int first_block = v < fold.rem ? 2 * v : v + fold.rem;
    return BlockSplit{count, static_cast<std::size_t>(n)}.offset(
               static_cast<std::size_t>(first_block)) -
           offset;
  };
}

// Steps at distances p/2, p/4, ..., 1: the top bit picks the part first,
// so after the last step core rank v holds the v-th range of the buffer in
// order. Example, p = 4, even halves, buffer [A B C D]:
//   distance 2: ranks 0,1 keep [A B] and send [C D] to 2,3 (and back)
//   distance 1: rank 0 keeps A, sends B to 1; rank 2 keeps C, sends D to 3
std::vector<Step> halving_steps(int v, int p, std::size_t count, const LowerPart& lower) {
  std::vector<Step> steps;
  std::size_t offset = 0;
  std::size_t n = count;
  for (int d = p / 2; d >= 1; d /= 2) {
    const std::size_t low = lower(v & ~(2 * d - 1), 2 * d, offset, n);
    if ((v & d) == 0) {
      steps.push_back({d, offset, low, offset + low, n - low});
    } else {
      steps.push_back({d, offset + low, n - low, offset, low});
    }
    offset = steps.back().keep_offset;
    n = steps.back().keep_count;
  }
  return steps;
}

// The two halves of the power-of-two core on core rank v. Both partners of
// a step compute the same cut, so a part that is empty (count < p) is
// skipped on both sides.
//
//   halving (reduce-scatter), distance p/2 .. 1: send the give part to the
//     partner, receive-reduce the partner's copy of the keep part. After
//     the step the keep part holds the sum over the 2*distance ranks
//     sharing it.
//   doubling (all-gather), distance 1 .. p/2 (steps in reverse): send the
//     (now complete) keep part to the partner, receive its keep part into
//     our give part: together they are the range before that halving step.
void halve(Comm& comm, const Tensor& data, ReduceOp combine, const Fold& fold,
           const std::vector<Step>& steps, int v) {
  const std::size_t elem = dtype_size(data.dtype);
  for (const Step& s : steps) {
    const int partner = fold.world(v ^ s.distance);
    const Tensor give = data.slice(s.give_offset, s.give_count);
    const Tensor keep = data.slice(s.keep_offset, s.keep_count);
    Request out, in;
    if (give.count) out = comm.isend(partner, give.data, give.count * elem, kHalveTag);
    if (keep.count) in = comm.irecv_reduce(partner, keep, combine, kHalveTag);
    comm.wait(in);
    comm.wait(out);
  }
}

void double_up(Comm& comm, const Tensor& data, const Fold& fold, const std::vector<Step>& steps,
               int v) {
  const std::size_t elem = dtype_size(data.dtype);
  for (auto s = steps.rbegin(); s != steps.rend(); ++s) {
    const int partner = fold.world(v ^ s->distance);
    const Tensor give = data.slice(s->give_offset, s->give_count);
    const Tensor keep = data.slice(s->keep_offset, s->keep_count);
    Request out, in;
    if (keep.count) out = comm.isend(partner, keep.data, keep.count * elem, kDoubleTag);
    if (give.count) in = comm.irecv(partner, give.data, give.count * elem, kDoubleTag);
    comm.wait(in);
    comm.wait(out);
  }
}

// Which phases a collective runs, and what its folded pairs exchange.
struct Phases {
  bool halving;
  bool doubling;
};

Phases phases_of(Collective c) {
  return {c != Collective::all_gather, c != Collective::reduce_scatter};
}

// Block `rank` of the buffer cut into n (BlockSplit).
Tensor block_of(const Tensor& data, int n, int rank) {
  const BlockSplit split{data.count, static_cast<std::size_t>(n)};
  const auto i = static_cast<std::size_t>(rank);
  return data.slice(split.offset(i), split.size(i));
}

// The folded pair of world rank r exchanges, for collective c: see
// FoldExchange (allreduce/fold.h).
FoldExchange fold_exchange(Collective c, const Tensor& data, int n, int r) {
  const int extra = r - r % 2;
  switch (c) {
    case Collective::reduce_scatter: return {data, true, block_of(data, n, extra)};
    case Collective::all_gather: return {block_of(data, n, extra), false, data};
    default: return {data, true, data};
  }
}

LowerPart cut_of(Collective c, const Fold& fold, int n, std::size_t count) {
  if (c == Collective::all_reduce) return even_halves;
  return at_blocks(fold, n, count);
}

}  // namespace

// The fold, the core's phases and the unfold as allreduce/fold.h
// schedules them.
void HalvingDoublingScheme::run_collective(Comm& comm, Collective c, Tensor data,
                                           ReduceOp op) const {
  GRADEX_ENFORCE_EQ(comm.size(), workers(), "halving_doubling runs on the workers only");
  const ReduceOp combine = combining_op(op);
  const int n = comm.size();
  const Fold fold(n);
  const Phases phases = phases_of(c);
  if (n > 1 && data.count > 0) {
    const LowerPart cut = cut_of(c, fold, n, data.count);
    run_folded(comm, fold_exchange(c, data, n, comm.rank()), combine, fold, kFoldTag, kUnfoldTag,
               [&](int v) {
                 const std::vector<Step> steps = halving_steps(v, fold.p, data.count, cut);
                 if (phases.halving) halve(comm, data, combine, fold, steps, v);
                 if (phases.doubling) double_up(comm, data, fold, steps, v);
               });
  }
  if (c == Collective::all_reduce) finish_reduce(data, op, n);
  if (c == Collective::reduce_scatter) finish_reduce(block_of(data, n, comm.rank()), op, n);
}

void HalvingDoublingScheme::allreduce(Comm& comm, Tensor data, ReduceOp op) {
  run_collective(comm, Collective::all_reduce, data, op);
}

void HalvingDoublingScheme::reduce_scatter(Comm& comm, Tensor data, ReduceOp op) {
  run_collective(comm, Collective::reduce_scatter, data, op);
}

void HalvingDoublingScheme::all_gather(Comm& comm, Tensor data) {
  run_collective(comm, Collective::all_gather, data, ReduceOp::sum);
}

Traffic HalvingDoublingScheme::expected_traffic(int endpoint, std::size_t count,
                                                DType dtype) const {
  return collective_traffic(Collective::all_reduce, endpoint, count, dtype);
}

Traffic HalvingDoublingScheme::collective_traffic(Collective c, int endpoint, std::size_t count,
                                                  DType dtype) const {
  if (!provides(c)) return Scheme::collective_traffic(c, endpoint, count, dtype);
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
  // The fold hands its range to the partner, the unfold returns one.
  if (endpoint < 2 * fold.rem) {
    const FoldExchange x = fold_exchange(c, Tensor{nullptr, count, dtype}, n, endpoint);
    if (v < 0) {
      send(x.handed.count);
      receive(x.returned.count);
    } else {
      receive(x.handed.count);
      send(x.returned.count);
    }
  }
  if (v < 0) return t;
  const Phases phases = phases_of(c);
  for (const Step& s : halving_steps(v, fold.p, count, cut_of(c, fold, n, count))) {
    if (phases.halving) {
      send(s.give_count);
      receive(s.keep_count);
    }
    if (phases.doubling) {
      send(s.keep_count);
      receive(s.give_count);
    }
  }
  return t;
}

double HalvingDoublingScheme::model_time(std::size_t bytes, const Topology& topology) const {
  return collective_model_time(Collective::all_reduce, bytes, topology);
}

// Step by step as scheduled above: halving at distances p/2 .. 1 moves
// about S/2, S/4, ... S/p each way between partners (both directions at
// once, each on its own ports), doubling retraces it; the largest part a
// pair of a step exchanges, over the slowest pair, paces the step.
double HalvingDoublingScheme::collective_model_time(Collective c, std::size_t bytes,
                                                    const Topology& topology) const {
  if (!provides(c)) return Scheme::collective_model_time(c, bytes, topology);
  const int n = workers();
  if (n <= 1 || bytes == 0) return 0;
  const Fold fold(n);
  const Phases phases = phases_of(c);
  double total = 0;
  if (c == Collective::all_reduce) {
    double part = static_cast<double>(bytes);
    for (int d = fold.p / 2; d >= 1; d /= 2) {
      part /= 2;
      total += 2 * slowest_message(topology, fold.pairs_at(d), part);  // halving + its doubling
    }
    const double s = static_cast<double>(bytes);
    return total + fold_model_time(fold, topology, s, s);
  }
  // Block-aligned cuts are uneven when n is not a power of two: take each
  // step's largest part (the model takes bytes, so count bytes as elements).
  const LowerPart cut = cut_of(c, fold, n, bytes);
  std::vector<double> largest;
  for (int v = 0; v < fold.p; ++v) {
    const std::vector<Step> steps = halving_steps(v, fold.p, bytes, cut);
    largest.resize(steps.size(), 0.0);
    for (std::size_t i = 0; i < steps.size(); ++i) {
      largest[i] = std::max(largest[i], static_cast<double>(
                                            phases.halving ? steps[i].give_count : steps[i].keep_count));
    }
  }
  for (std::size_t i = 0; i < largest.size(); ++i) {
    total += slowest_message(topology, fold.pairs_at(fold.p >> (i + 1)), largest[i]);
  }
  const double whole = static_cast<double>(bytes);
  const double block = static_cast<double>(BlockSplit{bytes, static_cast<std::size_t>(n)}.size(0));
  return total + (phases.halving ? fold_model_time(fold, topology, whole, block)
                                 : fold_model_time(fold, topology, block, whole));
}

}  // namespace gradex
