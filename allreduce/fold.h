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

// Schedule on world rank r of a world with n > 1 ranks and data.count > 0:
//   fold:   r < 2*rem, even: send the whole buffer to r+1 and wait for the
//           result; r < 2*rem, odd: receive-reduce r-1's buffer into ours;
//   core:   `core(v)` on the p core ranks;
//   unfold: r < 2*rem, odd: send the whole result back to r-1.
void run_folded(Comm& comm, Tensor data, ReduceOp combine, const Fold& fold, Tag fold_tag,
                Tag unfold_tag, const std::function<void(int v)>& core);

// The fold and the unfold: the whole buffer once each way between the
// folded pairs, each on its own ports (0 when n is a power of two).
double fold_model_time(const Fold& fold, const Topology& topology, double bytes);

}  // namespace gradex
