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
// Flows given one at a time, for a set too large to hold (the n^2 pushes
// and pulls of a PS with a server on every worker, at thousands of
// ranks): flows(visit) calls visit(const Flow&) with every flow, in the
// same order each time it is called. A template, so that a generated set
// costs no indirect call per flow (n = 4,096 servers on as many workers
// make 67 million flows per protocol).
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
// times). Down the chain a hop shares its ports only with the hops there
// in its own phase, as many hops after their ring's costliest hop (rings
// that are copies of one another move together; NCCL's rings across
// rail-optimised nodes pass a GPU's NVLink port one, two, ... hops after
// their NIC, each alone). And the busiest port (hops of different rings
// that share a port take turns on it, as in slowest_flow) moves its bytes
// every step, hiding the latencies behind its transfers but the last.
//
// With `segments` per block, each hop forwards a segment as soon as it
// has arrived: the chain pays a segment's transfer and latency per step,
// then the block's other segments behind it, while the busiest port still
// moves every byte (a ring of 8 at 4 MiB in 64 KiB segments over 25 GB/s
// links with 20 us latency: 0.35 ms, where one message a block takes
// 0.57). `phases` such pipelines run one after the other, each rank
// starting the next once its own part of the last has arrived (the ring's
// reduce-scatter, then its all-gather). Rings that run beside other
// traffic get `share` of each port's rate (a hybrid PS's ring, beside its
// dedicated servers' pushes and pulls).
double rings_time(const Topology& topology, const std::vector<std::vector<int>>& rings,
                  double bytes, int steps, int segments = 1, int phases = 1, double share = 1);

// What the libraries' collectives are modelled by (the MPI and NCCL
// baselines): a bandwidth-optimal all-reduce, the ring's 2 (n-1) steps of
// S/n, which their large-message algorithms approach; and a reduce then a
// broadcast down binomial trees (log2 n rounds of S each way).
double ring_allreduce_bound(int n, std::size_t bytes, const Topology& topology);
double binomial_reduce_bcast_time(int n, std::size_t bytes, const Topology& topology);

namespace detail {

// What port_times reads of a flow's two ends, found once per pass: its
// link, the slots of its egress and ingress ports (an endpoint's intra
// port at its index, a NIC, an endpoint's or its node's, after them) and
// their rates, and the leaves whose uplink and downlink it crosses (-1:
// none). A PS with a server on every worker resolves n^2 flows twice
// per protocol: without reducing switches (every scheme but
// in_network's) that takes two reads of node_of, not one per question
// asked of the topology.
struct FlowEnds {
  const LinkSpec* link = nullptr;
  std::size_t egress = 0, ingress = 0;
  double egress_rate = 0, ingress_rate = 0;
  int up_leaf = -1, down_leaf = -1;
};

// flow_ends where an endpoint may be a reducing switch's port.
FlowEnds flow_ends_through_switches(const Topology& topology, int src, int dst);

inline FlowEnds flow_ends(const Topology& topology, int src, int dst) {
  if (!topology.switches.empty()) return flow_ends_through_switches(topology, src, dst);
  const std::size_t e = static_cast<std::size_t>(topology.endpoints());
  // As port_to, Topology::link, port_rate and crosses_spine answer when no
  // endpoint is a switch's port.
  const int a = topology.node_of.at(static_cast<std::size_t>(src));
  const int b = topology.node_of.at(static_cast<std::size_t>(dst));
  const bool inter = a != b;
  const LinkSpec& link = inter ? topology.inter : topology.intra;
  const auto slot = [&](int endpoint, int node) {
    return inter ? e + static_cast<std::size_t>(topology.nic_per_node ? node : endpoint)
                 : static_cast<std::size_t>(endpoint);
  };
  FlowEnds ends{.link = &link,
                .egress = slot(src, a),
                .ingress = slot(dst, b),
                .egress_rate = link.bytes_per_second,
                .ingress_rate = link.bytes_per_second};
  if (inter && topology.nodes_per_leaf > 0) {
    const int up = a / topology.nodes_per_leaf, down = b / topology.nodes_per_leaf;
    if (up != down) {
      ends.up_leaf = up;
      ends.down_leaf = down;
    }
  }
  return ends;
}

// Calls each(flow, link, seconds) with the flow's link and the time the
// bytes on the busier of the flow's two ports take (and, across the
// spine, on its leaf's uplink or downlink): flows that share a port take
// turns on it. The flows are visited twice, in the same order: once to
// count each port's bytes, once to time each flow.
template <typename Source, typename Each>
void port_times(const Topology& topology, const Source& flows, Each each) {
  // Bytes on the wire per port, in one array: egress ports (by slot), then
  // ingress ports, then (with a second tier) the leaves' uplinks and
  // downlinks.
  const std::size_t e = static_cast<std::size_t>(topology.endpoints());
  const std::vector<double> leaf_rate = topology.leaf_rates();
  const std::size_t leaves = leaf_rate.size();
  std::vector<double> load(4 * e + 2 * leaves, 0.0);
  const std::size_t ingress = 2 * e, up = 4 * e, down = 4 * e + leaves;
  flows([&](const Flow& f) {
    if (f.src == f.dst) return;
    const FlowEnds ends = flow_ends(topology, f.src, f.dst);
    const double wire = ends.link->wire_bytes(f.bytes);
    load[ends.egress] += wire;
    load[ingress + ends.ingress] += wire;
    if (ends.up_leaf >= 0) load[up + static_cast<std::size_t>(ends.up_leaf)] += wire;
    if (ends.down_leaf >= 0) load[down + static_cast<std::size_t>(ends.down_leaf)] += wire;
  });
  flows([&](const Flow& f) {
    if (f.src == f.dst) return;
    const FlowEnds ends = flow_ends(topology, f.src, f.dst);
    if (ends.link->unlimited()) {
      each(f, *ends.link, 0.0);
      return;
    }
    // Each port at its own rate (a switch's port and a GPU's differ).
    double serialise = std::max(load[ends.egress] / ends.egress_rate,
                                load[ingress + ends.ingress] / ends.ingress_rate);
    if (ends.up_leaf >= 0) {
      const auto l = static_cast<std::size_t>(ends.up_leaf);
      serialise = std::max(serialise, load[up + l] / leaf_rate[l]);
    }
    if (ends.down_leaf >= 0) {
      const auto l = static_cast<std::size_t>(ends.down_leaf);
      serialise = std::max(serialise, load[down + l] / leaf_rate[l]);
    }
    each(f, *ends.link, serialise);
  });
}

}  // namespace detail

template <typename Source>
double slowest_flow_of(const Topology& topology, const Source& flows) {
  double worst = 0;
  detail::port_times(topology, flows, [&](const Flow& f, const LinkSpec& link, double serialise) {
    worst = std::max(worst, link.delay(f.bytes) + serialise);
  });
  return worst;
}

}  // namespace gradex
