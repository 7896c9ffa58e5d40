// Folding a world of n ranks onto the largest power of two p <= n, for the
// butterfly algorithms (halving-doubling, recursive doubling): among the
// first 2*rem ranks (rem = n - p), each even rank hands its buffer to the
// odd rank after it and sits out until that rank hands the result back;
// the odd ones and the ranks from 2*rem on form the core ranks 0..p-1.
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "common/comm.h"
#include "common/topology.h"

namespace gradex {

struct Fold {
  int p = 1;
  int rem = 0;

  explicit Fold(int n) {
    while (p * 2 <= n) p *= 2;
    rem = n - p;
  }
  // Core rank of world rank r, or -1 if r sits out.
  int core(int r) const {
    if (r < 2 * rem) return r % 2 == 1 ? r / 2 : -1;
    return r - rem;
  }
  // World rank of core rank v.
  int world(int v) const { return v < rem ? 2 * v + 1 : v + rem; }
  // The world ranks of the core's partner pairs at distance d (v, v ^ d).
  std::vector<std::pair<int, int>> pairs_at(int d) const;
};

// What a folded pair (extra rank e, even, and its partner e + 1) moves:
// e hands `handed` to e + 1, which reduces it into its own copy (or copies
// it, when `reduce_handed` is false), and e gets `returned` back after the
// core. Both ranks of the pair pass the same ranges. All-reduce: the whole
// buffer both ways; reduce-scatter: the whole buffer in, e's block back;
// all-gather: e's block in, the whole buffer back.
struct FoldExchange {
  Tensor handed;
  bool reduce_handed = true;
  Tensor returned;
};

// Schedule on world rank r of a world with n > 1 ranks and data.count > 0:
//   fold:   r < 2*rem, even: send `handed` to r+1 and wait for `returned`;
//           r < 2*rem, odd: receive r-1's `handed` (reduce or copy);
//   core:   `core(v)` on the p core ranks;
//   unfold: r < 2*rem, odd: send `returned` back to r-1.
void run_folded(Comm& comm, const FoldExchange& exchange, ReduceOp combine, const Fold& fold,
                Tag fold_tag, Tag unfold_tag, const std::function<void(int v)>& core);

// The fold and the unfold: `handed` and `returned` bytes, each once, between
// the folded pairs, each on its own ports (0 when n is a power of two).
double fold_model_time(const Fold& fold, const Topology& topology, double handed,
                       double returned);

}  // namespace gradex
