// Reduce-scatter and all-gather over the double binary tree (allreduce/
// tree.h). The buffer is cut into n blocks (BlockSplit), block b belonging
// to rank b, and each block in two halves: half t travels over tree t.
//
// In a tree there is one path between any two ranks, so each half-block
// has one way to go:
//   reduce-scatter: half t of block b is summed on its way to rank b. A
//                   rank adds what each neighbour further from b sends it
//                   to its own copy and passes the sum to the neighbour
//                   nearer b (or keeps it, being b).
//   all-gather:     half t of block b spreads out from rank b: a rank
//                   receives it from the neighbour nearer b and forwards
//                   it to every other neighbour.
// Every rank sends (all-gather: receives) each other rank's half-block once
// per tree, (n-1)/n of the buffer in all, as a ring does. What it receives
// (all-gather: sends) depends on its place: an interior rank takes a copy
// of most blocks from each of its two children, so about the whole buffer
// arrives at a rank interior in one tree (and a leaf in the other), and
// 1/n of it at a leaf of both. The in-port of an interior rank then carries
// (n+1)/n of the buffer where a ring's carries (n-1)/n: a tree's price for
// reaching every rank in O(log n) hops.
#pragma once

#include <array>
#include <cstddef>

#include "common/collective.h"
#include "common/comm.h"
#include "common/topology.h"

namespace gradex {

// Whether `rank` lies in the subtree of `top` (itself included) in tree
// `which` of the double binary tree over n ranks. O(1): in the in-order tree
// a subtree is an interval of ranks.
bool double_tree_below(int n, int which, int top, int rank);

// Where half-blocks owned by `owner` move at `rank` in tree `which`.
struct TreeRoute {
  int toward = -1;                 // the neighbour on the path to owner; -1 at owner
  std::array<int, 3> away{-1, -1, -1};  // the other neighbours, -1 where absent
  int away_count() const { return (away[0] >= 0) + (away[1] >= 0) + (away[2] >= 0); }
};
TreeRoute tree_route(int n, int which, int rank, int owner);

// The two collectives (reduce_scatter or all_gather), as above, in
// segments of at most segment_bytes. Reduce-scatter combines with `op`
// (already the combining op: avg is divided by the caller).
void tree_block_collective(Comm& comm, Collective c, Tensor data, ReduceOp op,
                           std::size_t segment_bytes);
// The link traffic of `rank` in tree_block_collective over `count` elements.
Traffic tree_block_traffic(Collective c, int n, int rank, std::size_t count, DType dtype,
                           std::size_t segment_bytes);
// Its cost model on `topology` (docs/architecture.md, Cost model): the
// busiest port's bytes over its rate, plus the pipeline's fill along the
// tree's longest path (a half-block from one leaf to another).
double tree_block_model_time(Collective c, int n, std::size_t bytes, const Topology& topology,
                             std::size_t segment_bytes);

}  // namespace gradex
