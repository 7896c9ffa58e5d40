// Alpha-beta building blocks for the schemes' cost models (docs/architecture.md, Cost model;
// table): a message of S bytes over a link of rate B and latency a takes
// a + S / B. Each scheme composes these next to its code (Scheme::
// model_time); the simulator checks them where no two flows share a port.
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

#include "common/topology.h"

namespace gradex {

// A port of the NIC model: an endpoint's intra-node port, or an inter-node
// NIC (the endpoint's own, or its node's when the node shares one).
struct PortId {
  bool inter = false;
  int owner = 0;  // endpoint, or node for a shared NIC
  auto operator<=>(const PortId&) const = default;
};
// The port `endpoint` uses to talk to `peer` (both ways: full duplex).
PortId port_to(const Topology& topology, int endpoint, int peer);

// a + bytes / B over `link`; no bandwidth term on an unlimited link.
double message_time(const LinkSpec& link, double bytes);
// One message of a step: `bytes` from `src` to `dst`.
struct Flow {
  int src = 0;
  int dst = 0;
  double bytes = 0;
};
// One step in which every flow moves at once: the slowest decides. Flows
// that share a port take turns on it (the ports are full duplex: egress
// and ingress count apart), so each pays for all the bytes on the busier
// of its two ports, plus its link's latency. 0 for no flows.
double slowest_flow(const Topology& topology, const std::vector<Flow>& flows);
// Flows given one at a time, for a set too large to hold (a PS's n^2
// pushes and pulls at thousands of ranks): flows(visit) calls visit(const
// Flow&) with every flow, in the same order each time it is called. A
// template, so that a generated set costs no indirect call per flow (a
// flow costs a few dozen instructions: at 4,096 ranks the hybrid PS's
// model visits 67 million of them per protocol).
template <typename Source>
double slowest_flow_of(const Topology& topology, const Source& flows);
// The same without the latencies: the busiest port's bytes over its rate,
// what a pipeline's step takes once it is full.
double busiest_port_time(const Topology& topology, const std::vector<Flow>& flows);
// One step in which every pair (src, dst) moves `bytes` at once: the
// slowest message decides. Messages that share a port (a node's one NIC,
// Topology::nic_per_node) take turns on it, so each pays for every message
// on the busier of its two ports. 0 for no pairs.
double slowest_message(const Topology& topology, const std::vector<std::pair<int, int>>& pairs,
                       double bytes);

// Rings that run `steps` steps together, each step moving `bytes` over
// every hop of every ring (ring[i] to ring[i + 1], the last back to the
// first); the slower of two paces decides. A rank forwards what it has
// received, so a chain of `steps` consecutive hops of one ring pays each
// hop's latency and transfer in turn (the costliest chain counts: on nodes
// of 8 GPUs it crosses a NIC once every 8 hops and NVLink the other 7
// times). And the busiest port (hops of different rings that share a port
// take turns on it, as in slowest_flow) moves its bytes every step,
// hiding the latencies behind its transfers but the last.
double rings_time(const Topology& topology, const std::vector<std::vector<int>>& rings,
                  double bytes, int steps);

// What the libraries' collectives are modelled by (the MPI and NCCL
// baselines): a bandwidth-optimal all-reduce, the ring's 2 (n-1) steps of
// S/n, which their large-message algorithms approach; and a reduce then a
// broadcast down binomial trees (log2 n rounds of S each way).
double ring_allreduce_bound(int n, std::size_t bytes, const Topology& topology);
double binomial_reduce_bcast_time(int n, std::size_t bytes, const Topology& topology);

namespace detail {

// Calls each(flow, seconds) with the time the bytes on the busier of the
// flow's two ports take (and, across the spine, on its leaf's uplink or
// downlink): flows that share a port take turns on it. The flows are
// visited twice, in the same order: once to count each port's bytes, once
// to time each flow.
template <typename Source, typename Each>
void port_times(const Topology& topology, const Source& flows, Each each) {
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

}  // namespace detail

template <typename Source>
double slowest_flow_of(const Topology& topology, const Source& flows) {
  double worst = 0;
  detail::port_times(topology, flows, [&](const Flow& f, double serialise) {
    worst = std::max(worst, topology.link(f.src, f.dst).delay(f.bytes) + serialise);
  });
  return worst;
}

}  // namespace gradex
