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

namespace detail {

FlowEnds flow_ends_through_switches(const Topology& topology, int src, int dst) {
  const std::size_t e = static_cast<std::size_t>(topology.endpoints());
  const auto slot = [&](const PortId& p) { return (p.inter ? e : 0) + static_cast<std::size_t>(p.owner); };
  FlowEnds ends{.link = &topology.link(src, dst),
                .egress = slot(port_to(topology, src, dst)),
                .ingress = slot(port_to(topology, dst, src)),
                .egress_rate = topology.port_rate(src, dst),
                .ingress_rate = topology.port_rate(dst, src)};
  if (topology.crosses_spine(src, dst)) {
    ends.up_leaf = topology.leaf_of(src);
    ends.down_leaf = topology.leaf_of(dst);
  }
  return ends;
}

}  // namespace detail

namespace {

// The flows of a vector, by reference (rings_time finds a flow's index
// from its address).
auto each_of(const std::vector<Flow>& flows) {
  return [&flows](const auto& visit) {
    for (const Flow& f : flows) visit(f);
  };
}

}  // namespace

double slowest_flow(const Topology& topology, const std::vector<Flow>& flows) {
  return slowest_flow_of(topology, each_of(flows));
}

double busiest_port_time(const Topology& topology, const std::vector<Flow>& flows) {
  double worst = 0;
  detail::port_times(topology, each_of(flows), [&](const Flow&, const LinkSpec&, double serialise) {
    worst = std::max(worst, serialise);
  });
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
  detail::port_times(topology, each_of(step), [&](const Flow& f, const LinkSpec& link, double serialise) {
    const double delay = link.delay(f.bytes);
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
