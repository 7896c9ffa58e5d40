// Hierarchical all-reduce as three composed phases (ASTRA-sim, NCCL's
// intra/inter split): ranks are grouped into nodes of G consecutive ranks,
// with fast links inside a node and slow ones between nodes.
//
//   1. ring reduce-scatter inside each node: local rank l ends with block l
//      of the buffer (cut into G blocks) summed over its node;
//   2. local rank l of every node all-reduces block l across the nodes with
//      the inner scheme (options().inter_algorithm), so only 1/G of the
//      buffer per rank crosses the slow links;
//   3. ring all-gather inside each node spreads the G finished blocks.
//
// Its reduce-scatter is phases 1 and 2 with the inner scheme's
// reduce-scatter, its all-gather the reverse with the inner all-gather, so
// that rank r ends with block r as every provider does: the blocks a local
// rank owns, one per node, lie G blocks apart, and a copy into groups by
// local index (S bytes through memory, none on the wire) makes them the
// contiguous range those phases work on.
//
// Its broadcast is one pipelined tree over both levels: worker 0 down the
// node leaders (local rank 0; a chain when the inter-node algorithm is the
// ring, the in-order binary tree when it is the tree), and in each node a
// chain from its leader, so a segment crosses the slow links once per node.
#pragma once

#include <functional>
#include <memory>
#include <string_view>

#include "allreduce/pipelined_broadcast.h"
#include "common/comm.h"
#include "common/scheme.h"

namespace gradex {

// Builds a scheme by name; the registry injects it so that this folder does
// not depend on the list of schemes.
using SchemeFactory =
    std::function<std::unique_ptr<Scheme>(std::string_view name, const SchemeOptions&)>;

class HierarchicalScheme final : public Scheme {
 public:
  // Throws ConfigError naming "ranks_per_node" if it does not divide the
  // workers, or "inter_algorithm" if that is not a flat all-reduce.
  HierarchicalScheme(SchemeOptions options, const SchemeFactory& make_inner);

  void allreduce(Comm& comm, Tensor data, ReduceOp op) override;
  // Broadcast where the inter-node algorithm has a tree shape (ring, tree);
  // reduce-scatter and all-gather where it provides them (ring,
  // halving_doubling).
  bool provides(Collective c) const override;
  bool segmented() const override { return true; }
  void reduce_scatter(Comm& comm, Tensor data, ReduceOp op) override;
  void all_gather(Comm& comm, Tensor data) override;
  void broadcast(Comm& comm, Tensor data) override;
  Traffic collective_traffic(Collective c, int endpoint, std::size_t count,
                             DType dtype) const override;
  double collective_model_time(Collective c, std::size_t bytes,
                               const Topology& topology) const override;
  Traffic expected_traffic(int endpoint, std::size_t count, DType dtype) const override;
  // The sum of the three phases, each with its own links: two intra-node
  // ring phases of S, and the inner scheme's model on S/G between nodes
  // (with one NIC per node, the G concurrent inner all-reduces share it).
  double model_time(std::size_t bytes, const Topology& topology) const override;

  int nodes() const { return workers() / options().ranks_per_node; }

 private:
  BroadcastLinks broadcast_links(int rank) const;
  double slowest_node_ring_phase(std::size_t bytes, const Topology& topology) const;
  Topology between_nodes(const Topology& topology) const;

  std::unique_ptr<Scheme> inner_;  // runs on nodes() ranks
};

}  // namespace gradex
