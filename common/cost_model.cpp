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
                  double bytes, int steps, int segments, int phases) {
  std::vector<Flow> step;
  std::vector<std::size_t> feeder;  // the hop that brings a hop's sender what it forwards
  for (const std::vector<int>& ring : rings) {
    if (ring.size() <= 1) continue;
    const std::size_t first = step.size();
    for (std::size_t i = 0; i < ring.size(); ++i) {
      step.push_back({ring[i], ring[(i + 1) % ring.size()], bytes});
      feeder.push_back(first + (i + ring.size() - 1) % ring.size());
    }
  }
  if (step.empty() || steps <= 0 || phases <= 0) return 0;
  segments = std::max(segments, 1);
  // Each hop's step, for a segment: its latency after the segment's turn
  // on its busier port.
  std::vector<double> hop(step.size(), 0.0);
  std::vector<double> delay(step.size(), 0.0);
  std::vector<double> serialise(step.size(), 0.0);
  double slowest_segment = 0;  // the longest turn a segment takes on a port
  detail::port_times(topology, each_of(step), [&](const Flow& f, const LinkSpec& link, double turn) {
    const auto i = static_cast<std::size_t>(&f - step.data());
    delay[i] = link.delay(f.bytes / segments);
    serialise[i] = turn;
    hop[i] = delay[i] + turn / segments;
    slowest_segment = std::max(slowest_segment, turn / segments);
  });
  // The busiest port is busy every step and hides the latencies behind its
  // transfers but the last; between two phases, the latency of the hop
  // that brings its sender the previous phase's last segment.
  const double busiest = *std::max_element(serialise.begin(), serialise.end());
  double busiest_delay = 0;
  double busiest_gap = 0;
  for (std::size_t i = 0; i < step.size(); ++i) {
    if (serialise[i] != busiest) continue;
    busiest_delay = std::max(busiest_delay, delay[i]);
    busiest_gap = std::max(busiest_gap, delay[feeder[i]]);
  }
  // A rank forwards what it has received, so a chain of consecutive hops
  // pays each hop's latency and transfer in turn. The slower of the two
  // paces the rings.
  //
  // In segments: segment j of step k leaves once segment j of step k-1
  // has arrived and segment j-1 of step k has left. Every path through
  // that grid from the first segment to the last makes `steps` hops down
  // the chain (a segment's transfer and latency each) and `segments - 1`
  // moves along a port (a segment's transfer): the chain of steps, then
  // the last block's other segments behind its first.
  double chain = 0;
  std::size_t first = 0;
  for (const std::vector<int>& ring : rings) {
    if (ring.size() <= 1) continue;
    const std::vector<double> own(hop.begin() + static_cast<std::ptrdiff_t>(first),
                                  hop.begin() + static_cast<std::ptrdiff_t>(first + ring.size()));
    chain = std::max(chain, costliest_chain_per_step(own, steps));
    first += ring.size();
  }
  return std::max(phases * (steps * chain + (segments - 1) * slowest_segment),
                  phases * steps * busiest + busiest_delay + (phases - 1) * busiest_gap);
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
