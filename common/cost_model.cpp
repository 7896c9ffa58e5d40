#include "common/cost_model.h"

#include <algorithm>
#include <map>

namespace gradex {

double message_time(const LinkSpec& link, double bytes) {
  return link.latency_seconds + (link.unlimited() ? 0.0 : bytes / link.bytes_per_second);
}

PortId port_to(const Topology& topology, int endpoint, int peer) {
  const bool inter = !topology.same_node(endpoint, peer);
  return {inter, inter && topology.nic_per_node ? topology.node_of.at(endpoint) : endpoint};
}

double slowest_message(const Topology& topology, const std::vector<std::pair<int, int>>& pairs,
                       double bytes) {
  std::map<PortId, int> egress, ingress;  // messages per port
  for (const auto& [src, dst] : pairs) {
    if (src == dst) continue;
    ++egress[port_to(topology, src, dst)];
    ++ingress[port_to(topology, dst, src)];
  }
  double worst = 0;
  for (const auto& [src, dst] : pairs) {
    if (src == dst) continue;
    const int turns =
        std::max(egress[port_to(topology, src, dst)], ingress[port_to(topology, dst, src)]);
    worst = std::max(worst, message_time(topology.link(src, dst), turns * bytes));
  }
  return worst;
}

}  // namespace gradex
