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

namespace {

// Calls each(flow, seconds) with the time the bytes on the busier of the
// flow's two ports take (and, across the spine, on its leaf's uplink or
// downlink): flows that share a port take turns on it.
template <typename Each>
void port_times(const Topology& topology, const std::vector<Flow>& flows, Each each) {
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
  for (const Flow& f : flows) {
    if (f.src == f.dst) continue;
    if (topology.link(f.src, f.dst).unlimited()) {
      each(f, 0.0);
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
    each(f, serialise);
  }
}

}  // namespace

double slowest_flow(const Topology& topology, const std::vector<Flow>& flows) {
  double worst = 0;
  port_times(topology, flows, [&](const Flow& f, double serialise) {
    worst = std::max(worst, topology.link(f.src, f.dst).delay(f.bytes) + serialise);
  });
  return worst;
}

double busiest_port_time(const Topology& topology, const std::vector<Flow>& flows) {
  double worst = 0;
  port_times(topology, flows, [&](const Flow&, double serialise) { worst = std::max(worst, serialise); });
  return worst;
}

double slowest_message(const Topology& topology, const std::vector<std::pair<int, int>>& pairs,
                       double bytes) {
  std::vector<Flow> flows;
  flows.reserve(pairs.size());
  for (const auto& [src, dst] : pairs) flows.push_back({src, dst, bytes});
  return slowest_flow(topology, flows);
}

namespace {

// The latency per step of the costliest run of `steps` consecutive hops
// around `ring`: whole laps, then the costliest window of the hops left
// over. Where every hop costs the same it is that cost, exactly (a uniform
// ring's time does not depend on the order of a sum).
double chain_latency_per_step(const Topology& topology, const std::vector<int>& ring, double bytes,
                       int steps) {
  const std::size_t n = ring.size();
  std::vector<double> hop(n);
  for (std::size_t i = 0; i < n; ++i) hop[i] = topology.link(ring[i], ring[(i + 1) % n]).delay(bytes);
  const auto [low, high] = std::minmax_element(hop.begin(), hop.end());
  if (*low == *high) return *high;
  double lap = 0;
  for (double d : hop) lap += d;
  const std::size_t rest = static_cast<std::size_t>(steps) % n;
  double window = 0;
  for (std::size_t i = 0; i < rest; ++i) window += hop[i];
  double worst = window;
  for (std::size_t start = 1; start < n; ++start) {
    window += hop[(start + rest - 1) % n] - hop[start - 1];
    worst = std::max(worst, window);
  }
  return (static_cast<double>(static_cast<std::size_t>(steps) / n) * lap + worst) / steps;
}

}  // namespace

double rings_time(const Topology& topology, const std::vector<std::vector<int>>& rings,
                  double bytes, int steps) {
  std::vector<Flow> step;
  double latency = 0;  // per step, of the costliest chain
  for (const std::vector<int>& ring : rings) {
    if (ring.size() <= 1) continue;
    for (std::size_t i = 0; i < ring.size(); ++i) step.push_back({ring[i], ring[(i + 1) % ring.size()], bytes});
    latency = std::max(latency, chain_latency_per_step(topology, ring, bytes, steps));
  }
  if (step.empty() || steps <= 0) return 0;
  return steps * (busiest_port_time(topology, step) + latency);
}

double ring_allreduce_bound(int n, std::size_t bytes, const Topology& topology) {
  if (n <= 1 || bytes == 0) return 0;
  std::vector<int> ring(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) ring[static_cast<std::size_t>(r)] = r;
  return rings_time(topology, {ring}, static_cast<double>(bytes) / n, 2 * (n - 1));
}

double binomial_reduce_bcast_time(int n, std::size_t bytes, const Topology& topology) {
  if (n <= 1 || bytes == 0) return 0;
  const double rounds = std::ceil(std::log2(n));
  return 2 * rounds * slowest_message(topology, {{1, 0}}, static_cast<double>(bytes));
}

}  // namespace gradex
