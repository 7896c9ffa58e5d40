#include "common/cost_model.h"

#include <algorithm>

namespace gradex {

double message_time(const LinkSpec& link, double bytes) {
  return link.latency_seconds + (link.unlimited() ? 0.0 : bytes / link.bytes_per_second);
}

double slowest_message(const Topology& topology, const std::vector<std::pair<int, int>>& pairs,
                       double bytes) {
  double worst = 0;
  for (const auto& [src, dst] : pairs) {
    if (src == dst) continue;
    worst = std::max(worst, message_time(topology.link(src, dst), bytes));
  }
  return worst;
}

}  // namespace gradex
