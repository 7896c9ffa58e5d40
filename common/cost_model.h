// Alpha-beta building blocks for the schemes' cost models (docs/architecture.md, Cost model;
// table): a message of S bytes over a link of rate B and latency a takes
// a + S / B. Each scheme composes these next to its code (Scheme::
// model_time); the simulator checks them where no two flows share a port.
#pragma once

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
// One step in which every pair (src, dst) moves `bytes` at once: the
// slowest message decides. Messages that share a port (a node's one NIC,
// Topology::nic_per_node) take turns on it, so each pays for every message
// on the busier of its two ports. 0 for no pairs.
double slowest_message(const Topology& topology, const std::vector<std::pair<int, int>>& pairs,
                       double bytes);

// What the libraries' collectives are modelled by (the MPI and NCCL
// baselines): a bandwidth-optimal all-reduce, the ring's 2 (n-1) steps of
// S/n, which their large-message algorithms approach; and a reduce then a
// broadcast down binomial trees (log2 n rounds of S each way).
double ring_allreduce_bound(int n, std::size_t bytes, const Topology& topology);
double binomial_reduce_bcast_time(int n, std::size_t bytes, const Topology& topology);

}  // namespace gradex
