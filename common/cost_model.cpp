#include "common/cost_model.h"

#include <algorithm>
#include <cmath>
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
// downlink): flows that share a port take turns on it. The flows are
// visited twice, in the same order: once to count each port's bytes, once
// to time each flow.
template <typename Each>
void port_times(const Topology& topology, const FlowSource& flows, Each each) {
  // Bytes on the wire per port: an endpoint's intra port at its index, a
  // NIC (an endpoint's, or its node's) after them.
  const std::size_t e = static_cast<std::size_t>(topology.endpoints());
  const auto slot = [&](const PortId& p) { return (p.inter ? e : 0) + static_cast<std::size_t>(p.owner); };
  std::vector<double> egress(2 * e, 0.0), ingress(2 * e, 0.0);
  // With a second tier: bytes through each leaf's uplink and downlink.
  const std::vector<double> leaf_rate = topology.leaf_rates();
  std::vector<double> up(leaf_rate.size(), 0.0), down(leaf_rate.size(), 0.0);
  flows([&](const Flow& f) {
    if (f.src == f.dst) return;
    const double wire = topology.link(f.src, f.dst).wire_bytes(f.bytes);
    egress[slot(port_to(topology, f.src, f.dst))] += wire;
    ingress[slot(port_to(topology, f.dst, f.src))] += wire;
    if (!topology.crosses_spine(f.src, f.dst)) return;
    if (const int l = topology.leaf_of(f.src); l >= 0) up[static_cast<std::size_t>(l)] += wire;
    if (const int l = topology.leaf_of(f.dst); l >= 0) down[static_cast<std::size_t>(l)] += wire;
  });
  flows([&](const Flow& f) {
    if (f.src == f.dst) return;
    if (topology.link(f.src, f.dst).unlimited()) {
      each(f, 0.0);
      return;
    }
    // Each port at its own rate (a switch's port and a GPU's differ).
    double serialise = std::max(
        egress[slot(port_to(topology, f.src, f.dst))] / topology.port_rate(f.src, f.dst),
        ingress[slot(port_to(topology, f.dst, f.src))] / topology.port_rate(f.dst, f.src));
    if (topology.crosses_spine(f.src, f.dst)) {
      if (const int l = topology.leaf_of(f.src); l >= 0) {
        serialise = std::max(serialise, up[static_cast<std::size_t>(l)] / leaf_rate[static_cast<std::size_t>(l)]);
      }
      if (const int l = topology.leaf_of(f.dst); l >= 0) {
        serialise = std::max(serialise, down[static_cast<std::size_t>(l)] / leaf_rate[static_cast<std::size_t>(l)]);
      }
    }
    each(f, serialise);
  });
}

FlowSource each_of(const std::vector<Flow>& flows) {
  return [&flows](const FlowVisitor& visit) {
    for (const Flow& f : flows) visit(f);
  };
}

template <typename Each>
void port_times(const Topology& topology, const std::vector<Flow>& flows, Each each) {
  port_times(topology, each_of(flows), each);
}

}  // namespace

double slowest_flow(const Topology& topology, const FlowSource& flows) {
  double worst = 0;
  port_times(topology, flows, [&](const Flow& f, double serialise) {
    worst = std::max(worst, topology.link(f.src, f.dst).delay(f.bytes) + serialise);
  });
  return worst;
}

double slowest_flow(const Topology& topology, const std::vector<Flow>& flows) {
  return slowest_flow(topology, each_of(flows));
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

// The cost per step of the costliest run of `steps` consecutive hops of a
// ring whose hops cost `hop`: whole laps, then the costliest window of the
// hops left over. Where every hop costs the same it is that cost, exactly
// (a uniform ring's time does not depend on the order of a sum).
double costliest_chain_per_step(const std::vector<double>& hop, int steps) {
  const std::size_t n = hop.size();
  const auto [low, high] = std::minmax_element(hop.begin(), hop.end());
  if (*low == *high) return *high;
  double lap = 0;
  for (double c : hop) lap += c;
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
  for (const std::vector<int>& ring : rings) {
    if (ring.size() <= 1) continue;
    for (std::size_t i = 0; i < ring.size(); ++i) step.push_back({ring[i], ring[(i + 1) % ring.size()], bytes});
  }
  if (step.empty() || steps <= 0) return 0;
  // Each hop's step: its latency after its bytes' turn on its busier port.
  std::vector<double> hop(step.size(), 0.0);
  double busiest = 0;
  double busiest_delay = 0;  // the latency after the busiest port's last transfer
  port_times(topology, step, [&](const Flow& f, double serialise) {
    const double delay = topology.link(f.src, f.dst).delay(f.bytes);
    hop[static_cast<std::size_t>(&f - step.data())] = delay + serialise;
    if (serialise > busiest) busiest_delay = 0;
    if (serialise >= busiest) busiest_delay = std::max(busiest_delay, delay);
    busiest = std::max(busiest, serialise);
  });
  // A rank forwards what it has received, so a chain of consecutive hops
  // pays each hop's latency and transfer in turn. The busiest port is busy
  // every step and hides the latencies behind its transfers but the last.
  // The slower of the two paces the rings.
  double chain = 0;
  std::size_t first = 0;
  for (const std::vector<int>& ring : rings) {
    if (ring.size() <= 1) continue;
    const std::vector<double> own(hop.begin() + static_cast<std::ptrdiff_t>(first),
                                  hop.begin() + static_cast<std::ptrdiff_t>(first + ring.size()));
    chain = std::max(chain, costliest_chain_per_step(own, steps));
    first += ring.size();
  }
  return std::max(steps * chain, steps * busiest + busiest_delay);
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
