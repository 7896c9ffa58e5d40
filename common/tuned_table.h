// What `gradex tune` measured: per worker count and message size, the
// scheme that was fastest on a real transport, for `auto` to run instead
// of asking the cost model (NCCL's tuner plug-ins, Horovod's autotune).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace gradex {

struct TunedChoice {
  int workers = 0;
  std::size_t bytes = 0;
  std::string scheme;
};

struct TunedTable {
  std::string transport;  // where it was measured
  std::vector<TunedChoice> choices;

  // The choice for `workers` at the largest tuned size not above `bytes`
  // (below every tuned size: the smallest); nullptr when `workers` was not
  // tuned.
  const TunedChoice* find(int workers, std::size_t bytes) const;
  // The worker counts it holds, ascending.
  std::vector<int> worker_counts() const;
};

}  // namespace gradex
