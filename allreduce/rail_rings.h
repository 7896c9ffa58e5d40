// NCCL's rings across nodes: one ring per GPU of a node (a channel), each
// all-reducing its own part of the buffer, all at once. Ranks are grouped
// into nodes of G consecutive ranks (options().ranks_per_node); ring c
// visits every node in turn and, inside node m, its GPUs from local rank c
// on:
//
//   ring c: m0.c -> m0.c+1 -> ... -> m0.c-1 -> m1.c -> ... -> m1.c-1 -> m2.c ...
//
// so it leaves each node from local rank c-1 and enters the next at local
// rank c. Each GPU is the exit of exactly one ring and the entry of exactly
// one: on rail-optimised nodes (a NIC per GPU) every NIC carries one ring's
// 2 (n-1)/n of S/G, and NVLink the other G-1 rings' traffic, all at once.
// A single ring would put all of 2 (n-1)/n S through one NIC per node; the
// two-level `hierarchical` runs its node and network phases one after
// another. On one node the rings are rotations of one another, as NCCL's
// channels are; with one GPU per node there is one ring, the plain ring.
//
// Every rank of ring c does what its ring neighbour does (the ring's
// schedule), but rings differ in where they cross between nodes, so the
// scheme is not symmetric under a rotation of the ranks.
#pragma once

#include <vector>

#include "common/comm.h"
#include "common/scheme.h"

namespace gradex {

// The members of ring `channel`, in ring order, over `workers` ranks in
// nodes of `per_node` (the last node may hold fewer). A rule, not a list:
// a rank's place in it is found in O(1) (position_of), so checking every
// rank's declared traffic stays O(ranks x rings), and no rank holds a list
// as long as the world.
GroupMembers rail_ring(int channel, int workers, int per_node);

class RailRingsScheme final : public Scheme {
 public:
  explicit RailRingsScheme(SchemeOptions options);
  void allreduce(Comm& comm, Tensor data, ReduceOp op) override;
  bool segmented() const override { return true; }
  Traffic expected_traffic(int endpoint, std::size_t count, DType dtype) const override;
  // The ring's model with every ring's blocks moving in each of the
  // 2 (n-1) steps (rings_time): the busiest port (a GPU's NVLink: G-1
  // rings on several nodes; a NIC: one ring, G where the node has one)
  // moves all its rings' blocks each step, and down a ring's chain a hop
  // shares its port with the hops in its own phase only.
  double model_time(std::size_t bytes, const Topology& topology) const override;

 private:
  int channels() const;
};

}  // namespace gradex
