#include "common/cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <unordered_map>
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

// A ring's hops do not all move at once. Each is paced by the hops
// before it, down to the ring's costliest (its slowest link, its latency):
// the hop after that one starts when its bytes arrive, the next one hop
// later, and so on. Rings that share a port move together on it only where
// their hops there are as far from their costliest hop: rings that are
// copies of one another (a node's rings through one NIC, rings on one kind
// of link) share it every step, while NCCL's rings across rail-optimised
// nodes, which pass a GPU's NVLink port one, two, ... hops after their NIC,
// find it mostly free. So down the chain a hop pays for the bytes of the
// hops in its own phase on its busier port (its own bytes at least); the
// port's whole load paces the rings as the busiest port (rings_time).
std::vector<double> in_phase_turns(const Topology& topology,
                                   const std::vector<std::vector<int>>& rings,
                                   const std::vector<Flow>& step, const std::vector<double>& delay) {
  // Each hop's ends, and its bytes alone on its ports.
  std::vector<detail::FlowEnds> ends(step.size());
  std::vector<double> own(step.size(), 0.0);
  for (std::size_t i = 0; i < step.size(); ++i) {
    ends[i] = detail::flow_ends(topology, step[i].src, step[i].dst);
    if (!ends[i].link->unlimited()) {
      own[i] = ends[i].link->wire_bytes(step[i].bytes) /
               std::min(ends[i].egress_rate, ends[i].ingress_rate);
    }
  }
  // Each hop's phase: hops since its ring's last costliest hop.
  std::vector<std::size_t> phase(step.size(), 0);
  std::size_t first = 0;
  for (const std::vector<int>& ring : rings) {
    if (ring.size() <= 1) continue;
    const std::size_t n = ring.size();
    double costliest = 0;
    for (std::size_t i = 0; i < n; ++i) costliest = std::max(costliest, delay[first + i] + own[first + i]);
    const auto is_costliest = [&](std::size_t i) {
      return delay[first + i] + own[first + i] >= costliest * (1 - 1e-9);
    };
    std::size_t start = 0;
    while (!is_costliest(start)) ++start;
    std::size_t since = 0;
    for (std::size_t k = 1; k <= n; ++k) {
      const std::size_t i = (start + k) % n;
      since = is_costliest(i) ? 0 : since + 1;
      phase[first + i] = since;
    }
    first += n;
  }
  // Bytes on the wire per (port, phase): egress and ingress ports, and the
  // leaves' uplinks and downlinks across a spine.
  const std::vector<double> leaf_rate = topology.leaf_rates();
  enum Side : std::uint64_t { egress, ingress, uplink, downlink };
  const auto key = [](Side side, std::size_t slot, std::size_t hop_phase) {
    return (static_cast<std::uint64_t>(slot) << 32) | (static_cast<std::uint64_t>(side) << 30) |
           static_cast<std::uint64_t>(hop_phase);
  };
  std::unordered_map<std::uint64_t, double> load;
  for (std::size_t i = 0; i < step.size(); ++i) {
    const double wire = ends[i].link->wire_bytes(step[i].bytes);
    load[key(egress, ends[i].egress, phase[i])] += wire;
    load[key(ingress, ends[i].ingress, phase[i])] += wire;
    if (ends[i].up_leaf >= 0) load[key(uplink, static_cast<std::size_t>(ends[i].up_leaf), phase[i])] += wire;
    if (ends[i].down_leaf >= 0) load[key(downlink, static_cast<std::size_t>(ends[i].down_leaf), phase[i])] += wire;
  }
  std::vector<double> turn(step.size(), 0.0);
  for (std::size_t i = 0; i < step.size(); ++i) {
    if (ends[i].link->unlimited()) continue;
    double longest = std::max(load.at(key(egress, ends[i].egress, phase[i])) / ends[i].egress_rate,
                              load.at(key(ingress, ends[i].ingress, phase[i])) / ends[i].ingress_rate);
    if (ends[i].up_leaf >= 0) {
      longest = std::max(longest, load.at(key(uplink, static_cast<std::size_t>(ends[i].up_leaf), phase[i])) /
                                      leaf_rate[static_cast<std::size_t>(ends[i].up_leaf)]);
    }
    if (ends[i].down_leaf >= 0) {
      longest = std::max(longest, load.at(key(downlink, static_cast<std::size_t>(ends[i].down_leaf), phase[i])) /
                                      leaf_rate[static_cast<std::size_t>(ends[i].down_leaf)]);
    }
    turn[i] = std::max(own[i], longest);
  }
  return turn;
}

}  // namespace

double rings_time(const Topology& topology, const std::vector<std::vector<int>>& rings,
                  double bytes, int steps, int segments, int phases, double share) {
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
    serialise[i] = turn / share;
  });
  const std::vector<double> shared = in_phase_turns(topology, rings, step, delay);
  for (std::size_t i = 0; i < step.size(); ++i) {
    hop[i] = delay[i] + shared[i] / share / segments;
    slowest_segment = std::max(slowest_segment, shared[i] / share / segments);
  }
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
