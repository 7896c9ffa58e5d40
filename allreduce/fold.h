// Folding a world of n ranks onto the largest power of two p <= n, for the
// butterfly algorithms (halving-doubling, recursive doubling): among the
// first 2*rem ranks (rem = n - p), each even rank hands its buffer to the
// odd rank after it and sits out until that rank hands the result back;
// the odd ones and the ranks from 2*rem on form the core ranks 0..p-1.
#pragma once

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
};

}  // namespace gradex
