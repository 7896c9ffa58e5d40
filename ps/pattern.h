// What each worker pushes to a server and pulls back, per collective: the
// one push / combine / pull engine (worker.cpp, server.cpp) runs all four.
// For a key range r of one server's shard (a chunk, or the whole shard):
//
//   all_reduce:     every worker pushes r and pulls r; the server sums.
//   reduce_scatter: every worker pushes r and pulls r's part of its own
//                   block (BlockSplit of the buffer over the workers); the
//                   server sums, and sends each worker only its part.
//   all_gather:     every worker pushes r's part of its own block and pulls
//                   r; the server places the parts (each key has one
//                   contributor) and sends the whole range to everyone.
//   broadcast:      the root pushes r, every other worker pulls it.
//
// A server therefore takes and gives what its keys need: a reduce-scatter
// pulls 1/n of an all-reduce's bytes, an all-gather pushes 1/n of them.
#pragma once

#include <algorithm>
#include <cstddef>

#include "common/collective.h"
#include "common/scheme.h"
#include "ps/sharding.h"

namespace gradex {

class PsPattern {
 public:
  PsPattern(Collective collective, std::size_t count, int workers)
      : collective_(collective), blocks_{count, static_cast<std::size_t>(workers)} {}

  Collective collective() const { return collective_; }
  // Whether the server combines the contributions (all-reduce,
  // reduce-scatter) or places them (all-gather, broadcast).
  bool combines() const { return collective_reduces(collective_); }
  // The part of `r` worker `w` pushes to r's server (count 0: none).
  KeyRange pushed(int w, KeyRange r) const {
    switch (collective_) {
      case Collective::all_gather: return own_part(w, r);
      case Collective::broadcast: return w == kBroadcastRoot ? r : KeyRange{r.offset, 0};
      default: return r;
    }
  }
  // The part of `r` worker `w` pulls back from r's server (count 0: none).
  KeyRange pulled(int w, KeyRange r) const {
    switch (collective_) {
      case Collective::reduce_scatter: return own_part(w, r);
      case Collective::broadcast: return w == kBroadcastRoot ? KeyRange{r.offset, 0} : r;
      default: return r;
    }
  }

 private:
  // r's intersection with worker w's block.
  KeyRange own_part(int w, KeyRange r) const {
    const std::size_t i = static_cast<std::size_t>(w);
    const std::size_t first = std::max(r.offset, blocks_.offset(i));
    const std::size_t end = std::min(r.offset + r.count, blocks_.offset(i) + blocks_.size(i));
    return end > first ? KeyRange{first, end - first} : KeyRange{first, 0};
  }

  Collective collective_;
  BlockSplit blocks_;
};

}  // namespace gradex
