#include "common/tuned_table.h"

#include <algorithm>

namespace gradex {

const TunedChoice* TunedTable::find(int workers, std::size_t bytes) const {
  const TunedChoice* below = nullptr;
  const TunedChoice* smallest = nullptr;
  for (const TunedChoice& c : choices) {
    if (c.workers != workers) continue;
    if (c.bytes <= bytes && (below == nullptr || c.bytes > below->bytes)) below = &c;
    if (smallest == nullptr || c.bytes < smallest->bytes) smallest = &c;
  }
  return below != nullptr ? below : smallest;
}

std::vector<int> TunedTable::worker_counts() const {
  std::vector<int> counts;
  for (const TunedChoice& c : choices) counts.push_back(c.workers);
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  return counts;
}

}  // namespace gradex
