// In-network reduction at two levels, as NCCL's NVLS with IB SHARP runs on
// NVSwitch nodes joined by an InfiniBand fabric that sums: a switch inside
// every node (NVLS) sums the node's GPUs, one between the nodes (SHARP)
// sums the nodes, and no GPU adds anything itself.
//
// W workers in M nodes of G (worker r = node k, local l, r = kG + l). The
// buffer is cut into chunks of G segments, chunk c into G pieces (piece l
// is local rank l's). For each chunk:
//
//   1. every GPU sends piece j to its node switch's port j (endpoint
//      W + kG + j), which sums the G contributions and sends piece j's
//      node sum to local rank j;
//   2. local rank l sends its piece through its NIC (rail l) to rail l's
//      port on the switch between the nodes (endpoint 2W + l), which sums
//      the M nodes' and sends the sum back to every node's local rank l.
//      That port stands for the rail's M ports, one per node, at their
//      summed rate (config/scenario.cpp): a node's piece is one
//      message, as SHARP's aggregation tree takes it, where M sub-pieces,
//      one to each of M ports, made the messages grow as the GPUs times
//      the nodes (35.9 million at 1,024 GPUs for a 1 GiB all-reduce, 17x
//      the ring's);
//   3. local rank l sends the finished piece to its node switch's port l,
//      which multicasts it to the node's G GPUs (itself included).
//
// On one node the switch multicasts each sum at once (steps 2 and 3's
// round trip through the GPU only exists to reach its NIC), which is the
// one-switch in_network's traffic.
//
// Chunks pipeline: several are under way at once on a GPU, so while one
// chunk crosses the nodes the next is summed inside them and an earlier
// one spread. Each GPU's NVLink carries S out
// and S in plus S/G each way, its NIC S/G each way, against the ring's
// 2 (n-1)/n S through every port.
//
// Without a switch between the nodes (NCCL's NVLSTree, its default on
// NVSwitch nodes for large all-reduces), step 2 is a double binary tree
// over the nodes instead (allreduce/tree.h): rail l's GPUs, one per node,
// split local rank l's piece in two halves, and half h goes up tree h (each
// GPU adds its children's half into its own, then sends it to its parent)
// and the root's sum comes back down it. A GPU is interior in at most one
// of the two trees, so its NIC carries about 2 S/G each way on four nodes
// or more (S/G on two): on two nodes the node's switch paces it, on more
// its NIC does, as in NCCL.
#pragma once

#include "common/scheme.h"

namespace gradex {

class InNetworkHierarchicalScheme final : public Scheme {
 public:
  // What sums across the nodes: a switch (SHARP), or a tree of the GPUs.
  enum class Across { reducing_switch, tree };
  // Throws ConfigError naming "ranks_per_node" if it does not divide the
  // workers.
  InNetworkHierarchicalScheme(SchemeOptions options, Across across);

  // The workers, then a node switch's port per worker, then (across a
  // switch) a port of the switch between the nodes per rail.
  int endpoints() const override {
    return 2 * workers() + (across_ == Across::reducing_switch ? options().ranks_per_node : 0);
  }
  ReducingSwitches reducing_switches() const override {
    return across_ == Across::reducing_switch ? ReducingSwitches::per_node_and_across
                                              : ReducingSwitches::per_node;
  }
  bool segmented() const override { return true; }
  // Each hop its own connection (NCCL's NVLS and trees keep a queue per
  // channel and direction): on one connection per peer a GPU's finished
  // piece would wait behind later chunks' contributions to the same node
  // port, and one tree's sums down behind the other tree's halves up.
  bool connection_per_tag() const override { return true; }
  void allreduce(Comm& comm, Tensor data, ReduceOp op) override;
  Traffic expected_traffic(int endpoint, std::size_t count, DType dtype) const override;
  // A pipeline of chunks: one chunk through the six hops (each the slowest
  // of its flows), then every further chunk at the pace of the busiest
  // port's bytes per chunk.
  double model_time(std::size_t bytes, const Topology& topology) const override;

  int nodes() const { return workers() / options().ranks_per_node; }

 private:
  Across across_;
};

}  // namespace gradex
