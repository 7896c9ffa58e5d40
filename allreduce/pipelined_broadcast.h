// A buffer from a root down a tree of ranks, pipelined in segments: every
// rank forwards a segment to its children as soon as it has arrived from
// its parent. A chain (one child each) is the ring's broadcast; a binary
// tree is the tree's. One engine, its traffic and its cost model.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "common/comm.h"
#include "common/topology.h"

namespace gradex {

// One rank's place in the broadcast tree: its parent (-1 at the root) and
// its children, in the order it sends each segment to them.
struct BroadcastLinks {
  int parent = -1;
  std::vector<int> children;
};

// The chain root -> root+1 -> ... -> root-1 over ranks 0..n-1.
BroadcastLinks chain_links(int rank, int n, int root);

// Runs on every rank of the tree (the others do not call it).
void pipelined_broadcast(Comm& comm, Tensor data, const BroadcastLinks& links,
                         std::size_t segment_bytes, Tag tag);

// The link traffic of a rank with these links: the buffer once from its
// parent and once to each child, a message per segment.
Traffic pipelined_broadcast_traffic(const BroadcastLinks& links, std::size_t count, DType dtype,
                                    std::size_t segment_bytes);

// The first segment reaches each rank after its parent's arrival plus one
// message over their link, queued behind the segments the parent sends to
// earlier children through the same port (an intra-node port or a NIC,
// common/cost_model.h's PortId); every later segment follows one pace
// behind, the pace being the busiest port's transfer time per segment. Time: the last arrival of the first segment + (k-1) paces.
// `links_of(r)` gives rank r's links, for ranks 0..n-1; the root is the
// rank without a parent.
double pipelined_broadcast_model_time(const Topology& topology, int n,
                                      const std::function<BroadcastLinks(int)>& links_of,
                                      std::size_t bytes, std::size_t segment_bytes);

}  // namespace gradex
