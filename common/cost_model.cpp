#include "common/cost_model.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

namespace gradex {

double message_time(const LinkSpec& link, double bytes) {
  return link.delay(bytes) + (link.unlimited() ? 0.0 : link.wire_bytes(bytes) / link.bytes_per_second);
}

PortId port_to(const Topology& topology, int endpoint, int peer) {
  const bool inter = !topology.same_node(endpoint, peer);
  return {inter, inter && topology.nic_per_node ? topology.node_of.at(endpoint) : endpoint};
}

double slowest_flow(const Topology& topology, const std::vector<Flow>& flows) {
  std::map<PortId, double> egress, ingress;  // bytes on the wire per port
  // With a second tier: bytes through each leaf's uplink and downlink.
  const std::vector<double> leaf_rate = topology.leaf_rates();
  std::map<int, double> up, down;
  for (const Flow& f : flows) {
    if (f.src == f.dst) continue;
    const double wire = topology.link(f.src, f.dst).wire_bytes(f.bytes);
    egress[port_to(topology, f.src, f.dst)] += wire;
    ingress[port_to(topology, f.dst, f.src)] += wire;
    if (!topology.crosses_spine(f.src, f.dst)) continue;
    if (const int l = topology.leaf_of(f.src); l >= 0) up[l] += wire;
    if (const int l = topology.leaf_of(f.dst); l >= 0) down[l] += wire;
  }
  double worst = 0;
  for (const Flow& f : flows) {
    if (f.src == f.dst) continue;
    const LinkSpec& link = topology.link(f.src, f.dst);
    if (link.unlimited()) {
      worst = std::max(worst, link.delay(f.bytes));
      continue;
    }
    // Each port at its own rate (a switch's port and a GPU's differ).
    double serialise = std::max(
        egress[port_to(topology, f.src, f.dst)] / topology.port_rate(f.src, f.dst),
        ingress[port_to(topology, f.dst, f.src)] / topology.port_rate(f.dst, f.src));
    if (topology.crosses_spine(f.src, f.dst)) {
      if (const int l = topology.leaf_of(f.src); l >= 0) {
        serialise = std::max(serialise, up[l] / leaf_rate[static_cast<std::size_t>(l)]);
      }
      if (const int l = topology.leaf_of(f.dst); l >= 0) {
        serialise = std::max(serialise, down[l] / leaf_rate[static_cast<std::size_t>(l)]);
      }
    }
    worst = std::max(worst, link.delay(f.bytes) + serialise);
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

double ring_allreduce_bound(int n, std::size_t bytes, const Topology& topology) {
  if (n <= 1 || bytes == 0) return 0;
  std::vector<std::pair<int, int>> hops;
  for (int r = 0; r < n; ++r) hops.emplace_back(r, (r + 1) % n);
  return 2.0 * (n - 1) * slowest_message(topology, hops, static_cast<double>(bytes) / n);
}

double binomial_reduce_bcast_time(int n, std::size_t bytes, const Topology& topology) {
  if (n <= 1 || bytes == 0) return 0;
  const double rounds = std::ceil(std::log2(n));
  return 2 * rounds * slowest_message(topology, {{1, 0}}, static_cast<double>(bytes));
}

}  // namespace gradex
