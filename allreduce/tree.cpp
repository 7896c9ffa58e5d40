#include "allreduce/tree.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "allreduce/request_window.h"
#include "allreduce/segments.h"
#include "allreduce/tree_blocks.h"
#include "common/cost_model.h"
#include "common/errors.h"

namespace gradex {

namespace {

// Distinct tags per tree and direction: a pair of ranks can be parent and
// child in tree A and child and parent in tree B, so without them an
// up-message of one tree could match a down-receive of the other.
constexpr Tag kUpTag[2] = {0, 1};
constexpr Tag kDownTag[2] = {2, 3};
constexpr Tag kBroadcastTag = 4;

// A rank's level in the in-order tree is its lowest set bit; the root (0)
// sits above everyone, at the smallest power of two >= n.
int level(int n, int rank) {
  if (rank != 0) return rank & -rank;
  int b = 1;
  while (b < n) b <<= 1;
  return b;
}

}  // namespace

// Example, n = 13 (levels 1, 2, 4, 8; the root 0 sits above them with a
// single child):
//   0 -> 8;  8 -> 4, 12;  4 -> 2, 6;  12 -> 10 (12 + 2 and 12 + 1 are past
//   the end);  2 -> 1, 3;  6 -> 5, 7;  10 -> 9, 11.
TreeLinks inorder_tree(int n, int rank) {
  GRADEX_ENFORCE(rank >= 0 && rank < n, "rank ", rank, " outside a tree of ", n);
  TreeLinks links;
  if (n == 1) return links;
  const int b = level(n, rank);
  if (rank != 0) {
    // The parent is one level up: clear bit b and set bit 2b, which gives
    // rank + b or rank - b, whichever has the higher level. If that is past
    // the end, rank - b is the parent: its right-child search below skips
    // the missing ranks and stops at us.
    const int up = (rank ^ b) | (b << 1);
    links.parent = up < n ? up : (rank ^ b);
  }
  int k = 0;
  // Left child: half a level down, always in range (the root has none).
  if (b > 1 && rank - b / 2 >= 0) links.children[k++] = rank - b / 2;
  // Right child: the nearest of rank + b/2, rank + b/4, ..., rank + 1 that
  // exists (ranks past the end shorten the right spine).
  for (int c = b / 2; c >= 1; c /= 2) {
    if (rank + c < n) {
      links.children[k++] = rank + c;
      break;
    }
  }
  return links;
}

// In tree A every even rank has children and every odd rank is a leaf.
// Tree B relabels tree A so that the roles swap: mirroring (r -> n-1-r)
// maps even to odd when n is even; when n is odd it would map even to even
// (every even rank interior in both trees), so tree B is tree A shifted by
// one rank instead, and only rank 0 is interior in both. NCCL does the same.
TreeLinks double_tree(int n, int rank, int which) {
  GRADEX_ENFORCE(which == 0 || which == 1, "a double tree has trees 0 and 1, not ", which);
  if (which == 0) return inorder_tree(n, rank);
  const bool shift = n % 2 == 1;
  const int role = shift ? (rank - 1 + n) % n : n - 1 - rank;
  auto relabel = [&](int x) { return x < 0 ? -1 : shift ? (x + 1) % n : n - 1 - x; };
  const TreeLinks a = inorder_tree(n, role);
  TreeLinks links;
  links.parent = relabel(a.parent);
  links.children = {relabel(a.children[0]), relabel(a.children[1])};
  return links;
}

// Schedule on every rank, for half t in {0, 1} over tree t, both halves cut
// into the same segments and interleaved segment by segment (j, then t):
//
//   reduce:    segment j of half t: receive-reduce child 0's partial sum of
//              it (wait), then child 1's (wait): never two receives into
//              the same memory at once; then send it to the parent. The
//              root then holds the full sum of every segment.
//   broadcast: the root of tree t sends segment j of half t to its
//              children; any other rank receives it from its parent and
//              sends it on to its children.
//
// A rank moves on to the next segment while its parent takes this one:
// segments pipeline up (and down) the tree. A rank starts broadcasting
// once its own reduce phase is done; overlapping the two phases (as NCCL
// does) would shorten the pipeline fill, not change the traffic.
//
// Each stream of requests (a tree's sends up, its receives from the
// parent, its sends down) keeps a bounded number of segments open, as
// NCCL keeps 8 slots per connection: a rank holds a bounded number of
// requests whatever the buffer's length. What a rank has without waiting
// in tree t (a leaf's segments going up, the root's going down, every
// receive from a parent) it posts a window ahead of segment j, before it
// waits for anything at j in either tree, and keeps open up to a window
// behind j: in a double tree most ranks are a leaf in one tree and forward
// in the other, and its waits in one tree must not hold the other back
// (two ranks each waiting for the other's tree would take turns, segment
// by segment). It waits for a peer in the other tree only when that peer
// is a whole window behind.
//
// No wait closes a cycle: at (segment j, tree t) a rank waits only for
// its children's segment j of tree t, for its parent's, or for a request
// at least a window older, which its peer takes at an earlier (j, t).
void TreeScheme::allreduce(Comm& comm, Tensor data, ReduceOp op) {
  GRADEX_ENFORCE_EQ(comm.size(), workers(), "tree runs on the workers only");
  const int n = comm.size();
  const int r = comm.rank();
  const ReduceOp combine = combining_op(op);
  const BlockSplit halves{data.count, 2};
  const Segmentation seg(halves.size(0), options().segment_bytes, data.dtype);
  const TreeLinks tree[2] = {double_tree(n, r, 0), double_tree(n, r, 1)};
  const Tensor half[2] = {data.slice(halves.offset(0), halves.size(0)),
                          data.slice(halves.offset(1), halves.size(1))};
  bool leaf[2], root[2];
  for (int t = 0; t < 2; ++t) {
    leaf[t] = tree[t].child_count() == 0;
    root[t] = tree[t].parent < 0;
  }
  // Twice a chain's window: the two trees meet at every rank. With 8, a
  // 33-rank tree whose link latency is twice a segment's transfer took 20%
  // longer than with every segment posted (tests/sim_model_test.cpp,
  // PipelinedTreeAtAnyWorldSize); with 16 it takes the same at every size
  // that test and the engine's records try.
  const std::size_t window = 2 * kSegmentsAhead;
  // Calls each(segment) on tree t's non-empty segments from `next` up to
  // j + window - 1, moving `next` past them.
  const auto lead = [&](std::size_t& next, std::size_t j, int t, auto each) {
    for (; next < seg.count && next < j + window; ++next) {
      const Tensor s = seg.of(half[t], next);
      if (s.count) each(s);
    }
  };

  RequestWindow up[2] = {RequestWindow(leaf[0] ? 2 * window : window),
                         RequestWindow(leaf[1] ? 2 * window : window)};
  std::size_t next_up[2] = {0, 0};
  const auto send_up = [&](int t, const Tensor& s) {
    up[t].push(comm, comm.isend(tree[t].parent, s.data, s.bytes(), kUpTag[t]));
  };
  for (std::size_t j = 0; j < seg.count; ++j) {
    for (int t = 0; t < 2; ++t) {
      if (leaf[t] && !root[t]) lead(next_up[t], j, t, [&](const Tensor& s) { send_up(t, s); });
    }
    for (int t = 0; t < 2; ++t) {
      const Tensor s = seg.of(half[t], j);
      if (leaf[t] || s.count == 0) continue;  // half 1 may have one segment fewer
      for (int child : tree[t].children) {
        if (child < 0) continue;
        Request rq = comm.irecv_reduce(child, s, combine, kUpTag[t]);
        comm.wait(rq);
      }
      if (!root[t]) send_up(t, s);
    }
  }
  // Our partial sums must have been taken before the full sums land in the
  // same memory. The parent takes every one of them in its reduce loop,
  // before it starts to broadcast, so waiting for all of them here costs
  // nothing.
  for (RequestWindow& w : up) w.drain(comm);

  // A forwarding rank waits for segment j's receive at j; a leaf only
  // keeps its window of them posted.
  const auto behind = [&](int t) -> std::size_t { return leaf[t] || root[t] ? 2 : 1; };
  RequestWindow from_parent[2] = {RequestWindow(behind(0) * window), RequestWindow(behind(1) * window)};
  RequestWindow down[2] = {RequestWindow(2 * behind(0) * window), RequestWindow(2 * behind(1) * window)};
  std::size_t next_in[2] = {0, 0}, next_down[2] = {0, 0};
  const auto send_down = [&](int t, const Tensor& s) {
    for (int child : tree[t].children) {
      if (child >= 0) down[t].push(comm, comm.isend(child, s.data, s.bytes(), kDownTag[t]));
    }
  };
  for (std::size_t j = 0; j < seg.count; ++j) {
    for (int t = 0; t < 2; ++t) {
      if (root[t]) {
        lead(next_down[t], j, t, [&](const Tensor& s) { send_down(t, s); });
      } else {
        lead(next_in[t], j, t, [&](const Tensor& s) {
          from_parent[t].push(comm, comm.irecv(tree[t].parent, s.data, s.bytes(), kDownTag[t]));
        });
      }
    }
    for (int t = 0; t < 2; ++t) {
      const Tensor s = seg.of(half[t], j);
      if (root[t] || leaf[t] || s.count == 0) continue;
      from_parent[t].wait_oldest(comm);
      send_down(t, s);
    }
  }
  for (int t = 0; t < 2; ++t) {
    from_parent[t].drain(comm);
    down[t].drain(comm);
  }
  finish_reduce(data, op, n);
}

// Every tree link carries its half once each way (up in the reduce, down in
// the broadcast), in the half's non-empty segments.
Traffic TreeScheme::expected_traffic(int endpoint, std::size_t count, DType dtype) const {
  Traffic t;
  const int n = workers();
  const BlockSplit halves{count, 2};
  const Segmentation seg(halves.size(0), options().segment_bytes, dtype);
  for (int which = 0; which < 2; ++which) {
    const TreeLinks links = double_tree(n, endpoint, which);
    const std::uint64_t degree = links.child_count() + (links.parent >= 0 ? 1 : 0);
    const std::uint64_t bytes = halves.size(which) * dtype_size(dtype);
    const std::uint64_t messages = seg.nonempty(halves.size(which));
    t.bytes_sent += degree * bytes;
    t.bytes_received += degree * bytes;
    t.messages_sent += degree * messages;
    t.messages_received += degree * messages;
  }
  return t;
}

double TreeScheme::model_time(std::size_t bytes, const Topology& topology) const {
  const int n = workers();
  if (n <= 1 || bytes == 0) return 0;
  // The reduce and the broadcast follow each other, so each is paced by its
  // own busiest port. In the reduce a port carries the halves its
  // endpoint's children send up (in) and its own half (out); the broadcast
  // is the mirror image, so both phases take the same time. A node's
  // shared NIC carries what all its endpoints send to and receive from
  // other nodes. (Summing both phases' bytes per port would be too
  // optimistic for odd n, where rank 0 receives more than it sends in the
  // reduce and sends more in the broadcast.)
  const BlockSplit halves{bytes, 2};
  std::map<PortId, double> up_out, up_in;  // bytes per port in the reduce
  std::map<PortId, int> out_edges[2], in_edges[2];  // each tree's edges through each port
  for (int e = 0; e < n; ++e) {
    for (int which = 0; which < 2; ++which) {
      const int parent = double_tree(n, e, which).parent;
      if (parent < 0) continue;
      const double half = static_cast<double>(halves.size(static_cast<std::size_t>(which)));
      up_out[port_to(topology, e, parent)] += half;
      up_in[port_to(topology, parent, e)] += half;
      out_edges[which][port_to(topology, e, parent)] += 1;
      in_edges[which][port_to(topology, parent, e)] += 1;
    }
  }
  // Every message is a segment: its link's protocol sets what the port
  // carries per payload byte and what each hop costs.
  const double segment = std::min(static_cast<double>(options().segment_bytes), bytes / 2.0);
  if (segment <= 0) return 0;
  const auto port_rate = [&](const PortId& port) {
    const LinkSpec& l = port.inter ? topology.inter : topology.intra;
    return l.unlimited() ? 0.0 : l.wire_bytes(segment) / segment / l.bytes_per_second;  // s per byte
  };
  double phase_port = 0;  // seconds
  for (const auto* load : {&up_out, &up_in}) {
    for (const auto& [port, port_bytes] : *load) phase_port = std::max(phase_port, port_bytes * port_rate(port));
  }
  // Each phase is a pipeline. Its first segment climbs from the deepest
  // leaf to the root, each hop a latency and a transfer that shares the
  // hop's busier port with the tree's other first segments reaching it at
  // once (a parent takes its two children's together; the root has one;
  // the other tree's meet it there later, at another depth); the
  // other segments stream behind it at the busiest port's pace, so that
  // port's bytes count once but for the segment the climb already moved.
  double climb = 0;
  for (int which = 0; which < 2; ++which) {
    for (int leaf = 0; leaf < n; ++leaf) {
      double t = 0;
      for (int child = leaf, parent = double_tree(n, leaf, which).parent; parent >= 0;
           child = parent, parent = double_tree(n, parent, which).parent) {
        const PortId out = port_to(topology, child, parent), in = port_to(topology, parent, child);
        const double transfer =
            std::max(out_edges[which][out] * port_rate(out), in_edges[which][in] * port_rate(in));
        t += topology.link(child, parent).delay(segment) + transfer * segment;
      }
      climb = std::max(climb, t);
    }
  }
  const double half = static_cast<double>(halves.size(0));
  const double segments = std::max(1.0, std::ceil(half / segment));
  return 2 * (climb + phase_port * (segments - 1) / segments);
}

BroadcastLinks inorder_broadcast_links(int n, int rank) {
  const TreeLinks tree = inorder_tree(n, rank);
  BroadcastLinks links;
  links.parent = tree.parent;
  for (int child : tree.children) {
    if (child >= 0) links.children.push_back(child);
  }
  return links;
}

static_assert(kBroadcastRoot == 0, "the in-order tree is rooted at rank 0");

void TreeScheme::broadcast(Comm& comm, Tensor data) {
  GRADEX_ENFORCE_EQ(comm.size(), workers(), "tree runs on the workers only");
  if (comm.size() == 1) return;
  pipelined_broadcast(comm, data, inorder_broadcast_links(comm.size(), comm.rank()),
                      options().segment_bytes, kBroadcastTag);
}

void TreeScheme::reduce_scatter(Comm& comm, Tensor data, ReduceOp op) {
  GRADEX_ENFORCE_EQ(comm.size(), workers(), "tree runs on the workers only");
  tree_block_collective(comm, Collective::reduce_scatter, data, combining_op(op),
                        options().segment_bytes);
  const BlockSplit blocks{data.count, static_cast<std::size_t>(comm.size())};
  const auto mine = static_cast<std::size_t>(comm.rank());
  finish_reduce(data.slice(blocks.offset(mine), blocks.size(mine)), op, comm.size());
}

void TreeScheme::all_gather(Comm& comm, Tensor data) {
  GRADEX_ENFORCE_EQ(comm.size(), workers(), "tree runs on the workers only");
  tree_block_collective(comm, Collective::all_gather, data, ReduceOp::sum, options().segment_bytes);
}

Traffic TreeScheme::collective_traffic(Collective c, int endpoint, std::size_t count,
                                       DType dtype) const {
  switch (c) {
    case Collective::all_reduce: return expected_traffic(endpoint, count, dtype);
    case Collective::broadcast:
      if (workers() == 1) return {};
      return pipelined_broadcast_traffic(inorder_broadcast_links(workers(), endpoint), count,
                                         dtype, options().segment_bytes);
    default: return tree_block_traffic(c, workers(), endpoint, count, dtype, options().segment_bytes);
  }
}

double TreeScheme::collective_model_time(Collective c, std::size_t bytes,
                                         const Topology& topology) const {
  const int n = workers();
  switch (c) {
    case Collective::all_reduce: return model_time(bytes, topology);
    case Collective::broadcast:
      return pipelined_broadcast_model_time(
          topology, n, [n](int r) { return inorder_broadcast_links(n, r); }, bytes,
          options().segment_bytes);
    default: return tree_block_model_time(c, n, bytes, topology, options().segment_bytes);
  }
}

}  // namespace gradex
