// Double binary tree all-reduce (NCCL's "tree" algorithm): the buffer is cut
// in two halves; half 0 is reduced up and broadcast down tree A, half 1
// over tree B. Tree B is arranged so that a rank interior in one tree is a
// leaf in the other (except at most one rank), so every rank sends and
// receives about one buffer in total, while a message crosses only
// O(log n) hops: latency-friendly for small buffers.
#pragma once

#include <array>

#include "allreduce/pipelined_broadcast.h"
#include "common/comm.h"
#include "common/scheme.h"

namespace gradex {

// One rank's links in a binary tree; -1 where absent. Children are filled
// from index 0, so children[1] != -1 implies children[0] != -1.
struct TreeLinks {
  int parent = -1;
  std::array<int, 2> children{-1, -1};

  int child_count() const { return (children[0] >= 0) + (children[1] >= 0); }
};

// The in-order binary tree over ranks 0..n-1 rooted at 0: a rank's level is
// its lowest set bit, so odd ranks are leaves and the tree stays balanced.
// Ranks are numbered in in-order, which keeps parents and children close.
TreeLinks inorder_tree(int n, int rank);
// inorder_tree's links as a broadcast's (allreduce/pipelined_broadcast.h).
BroadcastLinks inorder_broadcast_links(int n, int rank);
// Tree `which` (0 = A, 1 = B) of the double binary tree over n ranks.
TreeLinks double_tree(int n, int rank, int which);

// Also a broadcast: down the in-order tree from worker 0, pipelined in
// segments, so the first segment crosses log2 n hops instead of a chain's
// n-1 (each interior rank sends the buffer to two children); and a
// reduce-scatter and an all-gather over both trees (allreduce/tree_blocks.h).
class TreeScheme final : public Scheme {
 public:
  using Scheme::Scheme;
  void allreduce(Comm& comm, Tensor data, ReduceOp op) override;
  bool segmented() const override { return true; }
  bool provides(Collective) const override { return true; }
  void reduce_scatter(Comm& comm, Tensor data, ReduceOp op) override;
  void all_gather(Comm& comm, Tensor data) override;
  void broadcast(Comm& comm, Tensor data) override;
  Traffic collective_traffic(Collective c, int endpoint, std::size_t count,
                             DType dtype) const override;
  double collective_model_time(Collective c, std::size_t bytes,
                               const Topology& topology) const override;
  Traffic expected_traffic(int endpoint, std::size_t count, DType dtype) const override;
  // An approximation, not docs/architecture.md's unpipelined 2 log2(N) (a + S / B):
  // this tree is pipelined, so the busiest port's bytes over B, plus the
  // pipeline filling and draining, 2 depth (a + segment / B).
  double model_time(std::size_t bytes, const Topology& topology) const override;
};

}  // namespace gradex
