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

double slowest_flow(const Topology& topology, const std::vector<Flow>& flows) {
  std::map<PortId, double> egress, ingress;  // bytes per port
  for (const Flow& f : flows) {
    if (f.src == f.dst) continue;
    egress[port_to(topology, f.src, f.dst)] += f.bytes;
    ingress[port_to(topology, f.dst, f.src)] += f.bytes;
  }
  double worst = 0;
  for (const Flow& f : flows) {
    if (f.src == f.dst) continue;
    const double busier = std::max(egress[port_to(topology, f.src, f.dst)],
                                   ingress[port_to(topology, f.dst, f.src)]);
    worst = std::max(worst, message_time(topology.link(f.src, f.dst), busier));
  }
  return worst;
}

double slowest_message(const Topology& topology, const std::vector<std::pair<int, int>>& pairs,
                       double bytes) {
  std::vector<Flow> flows;
  flows.reserve(pairs.size());
  for (const auto& [src, dst] : pairs) flows.push_back({src, dst, bytes});
  return slowest_flow(topology, flows);
}

}  // namespace gradex
