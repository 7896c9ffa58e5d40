#include "allreduce/hierarchical.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "allreduce/ring.h"
#include "allreduce/tree.h"
#include "common/device_memory.h"
#include "common/errors.h"

namespace gradex {

namespace {

// The inner all-reduce runs on workers only, one per node: schemes with
// server endpoints (or another hierarchy) do not fit there.
constexpr std::string_view kInnerSchemes[] = {"ring", "tree", "halving_doubling"};

constexpr Tag kReduceScatterTag = 0;
constexpr Tag kAllGatherTag = 1;
constexpr Tag kBroadcastTag = 2;  // on the whole group, apart from the sub-groups' tags

// Node `node`'s g ranks.
GroupMembers node_members(int node, int g) { return GroupMembers::rule(g, node * g, 1); }

// Local rank `local` of each of the m nodes (as many as there are nodes:
// a rule, so that no rank holds a list that long).
GroupMembers peer_members(int local, int g, int m) { return GroupMembers::rule(m, local, g); }

// Rank r = node * G + local. Node k's ranks form one sub-group (tag space
// k); the ranks with the same local index l, one per node, form another
// (tag space nodes + l), so no two concurrent sub-groups share tags.
struct Levels {
  Levels(Comm& comm, int g, int m)
      : node(comm.rank() / g),
        local(comm.rank() % g),
        intra(comm, node_members(node, g), static_cast<std::uint32_t>(node)),
        inter(g == 1 ? comm
                     : peers.emplace(comm, peer_members(local, g, m),
                                     static_cast<std::uint32_t>(m + local))) {}
  int node;
  int local;
  SubComm intra;  // this rank's node
  // Its peers, the same local index on every node: with one rank per node
  // every rank in order, which is `comm` itself (a sub-group would only
  // rename ranks and tags, and the node's group moves nothing).
  std::optional<SubComm> peers;
  Comm& inter;
};

// Rank (node k, local l) owns block kG + l of the n = mG blocks, so local
// rank l's blocks, one per node, lie G blocks apart in the caller's buffer.
// Grouped by local index (blocks l, G + l, 2G + l, ... as group l) each
// local rank's blocks are one contiguous range, and the splits line up:
// BlockSplit gives the first count % n blocks one element more, which are
// the first blocks of each group, so splitting the grouped buffer in G
// and each group in m cuts exactly along the original blocks.
class Grouped {
 public:
  Grouped(Tensor caller, const Levels& at, int g, int m) : caller_(caller), g_(g), m_(m) {
    // One rank per node, or one node: the groups are the caller's blocks
    // in place, and an empty or phantom buffer has nothing to move.
    copies_ = caller.count > 0 && !caller.phantom() && g > 1 && m > 1;
    if (copies_) scratch_.resize(caller.bytes());
    all = copies_ ? Tensor{scratch_.data(), caller.count, caller.dtype} : caller;
    const BlockSplit groups{caller.count, static_cast<std::size_t>(g)};
    const auto local = static_cast<std::size_t>(at.local);
    group = all.slice(groups.offset(local), groups.size(local));
    const BlockSplit within{group.count, static_cast<std::size_t>(m)};
    const auto node = static_cast<std::size_t>(at.node);
    own = group.slice(within.offset(node), within.size(node));
    const BlockSplit blocks{caller.count, static_cast<std::size_t>(g * m)};
    const auto mine = static_cast<std::size_t>(at.node * g + at.local);
    block = caller.slice(blocks.offset(mine), blocks.size(mine));
    GRADEX_ENFORCE_EQ(own.count, block.count, "group ", local, " split off the blocks");
  }

  Tensor all;    // the grouped buffer
  Tensor group;  // this rank's group, l
  Tensor own;    // this rank's block within its group
  Tensor block;  // the same block in the caller's buffer

  // This rank's block between the two buffers.
  void copy_block(bool to_caller) {
    if (!copies_ || block.count == 0) return;
    if (to_caller) {
      copy_bytes(block.data, own.data, block.bytes());
    } else {
      copy_bytes(own.data, block.data, block.bytes());
    }
  }

  // The whole buffer between the caller's order and the groups.
  void regroup(bool to_groups) {
    if (!copies_) return;
    const std::size_t elem = dtype_size(caller_.dtype);
    const BlockSplit blocks{caller_.count, static_cast<std::size_t>(g_ * m_)};
    auto* mixed = static_cast<std::byte*>(caller_.data);
    std::size_t at = 0;
    for (int l = 0; l < g_; ++l) {
      for (int k = 0; k < m_; ++k) {
        const auto b = static_cast<std::size_t>(k * g_ + l);
        std::byte* original = mixed + blocks.offset(b) * elem;
        const std::size_t bytes = blocks.size(b) * elem;
        if (to_groups) {
          copy_bytes(scratch_.data() + at, original, bytes);
        } else {
          copy_bytes(original, scratch_.data() + at, bytes);
        }
        at += bytes;
      }
    }
  }

 private:
  Tensor caller_;
  int g_;
  int m_;
  bool copies_ = false;
  std::vector<std::byte> scratch_;
};

}  // namespace

HierarchicalScheme::HierarchicalScheme(SchemeOptions options, const SchemeFactory& make_inner)
    : Scheme(std::move(options)) {
  check_whole_nodes(this->options());
  const std::string& name = this->options().inter_algorithm;
  bool known = false;
  std::string names;
  for (std::string_view s : kInnerSchemes) {
    known = known || s == name;
    names += (names.empty() ? "" : ", ") + std::string(s);
  }
  if (!known) {
    throw ConfigError("inter_algorithm",
                      "unknown inter-node algorithm '" + name + "' (known: " + names + ")");
  }
  SchemeOptions inner = this->options();
  inner.workers = nodes();
  inner.ranks_per_node = 1;
  inner_ = make_inner(name, inner);
  GRADEX_ENFORCE(inner_ != nullptr, "no scheme built for '", name, "'");
}

void HierarchicalScheme::allreduce(Comm& comm, Tensor data, ReduceOp op) {
  GRADEX_ENFORCE_EQ(comm.size(), workers(), "hierarchical runs on the workers only");
  const int g = options().ranks_per_node;
  const std::size_t seg = options().segment_bytes;
  const ReduceOp combine = combining_op(op);
  Levels at(comm, g, nodes());

  // 1. block `local` of G, summed over this node (no-op when G == 1).
  ring_reduce_scatter(at.intra, data, combine, seg, kReduceScatterTag);
  // 2. the same block summed over all nodes (no-op when there is one node).
  //    avg combines as a sum here and is divided once, below, by n.
  const BlockSplit blocks{data.count, static_cast<std::size_t>(g)};
  inner_->allreduce(at.inter, data.slice(blocks.offset(at.local), blocks.size(at.local)), combine);
  // 3. every block to every rank of the node.
  ring_all_gather(at.intra, data, seg, kAllGatherTag);
  finish_reduce(data, op, comm.size());
}

// The all-reduce's first two phases on the grouped buffer: inside the node
// group `local` is summed over the node (ring), then the inner scheme
// reduce-scatters it across the nodes, leaving node k's part, which is
// this rank's block kG + l of the caller's buffer.
void HierarchicalScheme::reduce_scatter(Comm& comm, Tensor data, ReduceOp op) {
  GRADEX_ENFORCE_EQ(comm.size(), workers(), "hierarchical runs on the workers only");
  GRADEX_ENFORCE(provides(Collective::reduce_scatter), "no reduce-scatter over this inter-node algorithm");
  const ReduceOp combine = combining_op(op);
  Levels at(comm, options().ranks_per_node, nodes());
  Grouped grouped(data, at, options().ranks_per_node, nodes());
  grouped.regroup(/*to_groups=*/true);
  ring_reduce_scatter(at.intra, grouped.all, combine, options().segment_bytes, kReduceScatterTag);
  inner_->reduce_scatter(at.inter, grouped.group, combine);
  grouped.copy_block(/*to_caller=*/true);
  finish_reduce(grouped.block, op, comm.size());
}

// The reduce-scatter backwards: the inner scheme gathers group `local`
// across the nodes, the node's ring spreads the G groups, and the grouped
// buffer goes back to the caller's order.
void HierarchicalScheme::all_gather(Comm& comm, Tensor data) {
  GRADEX_ENFORCE_EQ(comm.size(), workers(), "hierarchical runs on the workers only");
  GRADEX_ENFORCE(provides(Collective::all_gather), "no all-gather over this inter-node algorithm");
  Levels at(comm, options().ranks_per_node, nodes());
  Grouped grouped(data, at, options().ranks_per_node, nodes());
  grouped.copy_block(/*to_caller=*/false);
  inner_->all_gather(at.inter, grouped.group);
  ring_all_gather(at.intra, grouped.all, options().segment_bytes, kAllGatherTag);
  grouped.regroup(/*to_groups=*/false);
}

Traffic HierarchicalScheme::expected_traffic(int endpoint, std::size_t count, DType dtype) const {
  const int g = options().ranks_per_node;
  const int node = endpoint / g;
  const int local = endpoint % g;
  const std::size_t seg = options().segment_bytes;
  const BlockSplit blocks{count, static_cast<std::size_t>(g)};
  Traffic t = ring_reduce_scatter_traffic(local, g, count, dtype, seg);
  t += inner_->expected_traffic(node, blocks.size(local), dtype);
  t += ring_all_gather_traffic(local, g, count, dtype, seg);
  return t;
}

double HierarchicalScheme::slowest_node_ring_phase(std::size_t bytes,
                                                   const Topology& topology) const {
  double slowest = 0;
  for (int k = 0; k < nodes(); ++k) {
    slowest = std::max(slowest, ring_phase_model_time(topology, node_members(k, options().ranks_per_node).list(),
                                                      static_cast<double>(bytes), options().segment_bytes));
  }
  return slowest;
}

// The inner scheme sees one endpoint per node over the inter-node links;
// with one NIC per node the G concurrent inner collectives share it.
Topology HierarchicalScheme::between_nodes(const Topology& topology) const {
  const int g = options().ranks_per_node;
  Topology between = Topology::grouped(nodes(), 1, 0, topology.intra, topology.inter);
  if (topology.nic_per_node && !between.inter.unlimited()) between.inter.bytes_per_second /= g;
  return between;
}

double HierarchicalScheme::model_time(std::size_t bytes, const Topology& topology) const {
  const std::size_t block = bytes / static_cast<std::size_t>(options().ranks_per_node);
  return 2 * slowest_node_ring_phase(bytes, topology) +
         (nodes() > 1 ? inner_->model_time(block, between_nodes(topology)) : 0.0);
}

bool HierarchicalScheme::provides(Collective c) const {
  const std::string& inter = options().inter_algorithm;
  switch (c) {
    case Collective::all_reduce: return true;
    case Collective::reduce_scatter:
    case Collective::all_gather: return inner_->provides(c);
    case Collective::broadcast: return inter == "ring" || inter == "tree";
  }
  return false;
}

// A leader sends each segment to its node's next rank first (the fast
// port), then to the leaders of its child nodes.
BroadcastLinks HierarchicalScheme::broadcast_links(int rank) const {
  const int g = options().ranks_per_node;
  const int node = rank / g;
  const int local = rank % g;
  BroadcastLinks links;
  if (local > 0) {
    links.parent = rank - 1;
    if (local + 1 < g) links.children.push_back(rank + 1);
    return links;
  }
  static_assert(kBroadcastRoot == 0, "the broadcast starts at node 0's leader");
  const BroadcastLinks between = options().inter_algorithm == "ring"
                                     ? chain_links(node, nodes(), 0)
                                     : inorder_broadcast_links(nodes(), node);
  if (between.parent >= 0) links.parent = between.parent * g;
  if (g > 1) links.children.push_back(rank + 1);
  for (int child : between.children) links.children.push_back(child * g);
  return links;
}

void HierarchicalScheme::broadcast(Comm& comm, Tensor data) {
  GRADEX_ENFORCE_EQ(comm.size(), workers(), "hierarchical runs on the workers only");
  GRADEX_ENFORCE(provides(Collective::broadcast), "no broadcast over this inter-node algorithm");
  if (comm.size() == 1) return;
  pipelined_broadcast(comm, data, broadcast_links(comm.rank()), options().segment_bytes,
                      kBroadcastTag);
}

Traffic HierarchicalScheme::collective_traffic(Collective c, int endpoint, std::size_t count,
                                               DType dtype) const {
  if (c == Collective::all_reduce || !provides(c)) {
    return Scheme::collective_traffic(c, endpoint, count, dtype);
  }
  if (c == Collective::broadcast) {
    if (workers() == 1) return {};
    return pipelined_broadcast_traffic(broadcast_links(endpoint), count, dtype,
                                       options().segment_bytes);
  }
  // A ring phase inside the node on the whole buffer, the inner scheme's
  // collective across the nodes on this rank's group.
  const int g = options().ranks_per_node;
  const int local = endpoint % g;
  const std::size_t seg = options().segment_bytes;
  const BlockSplit groups{count, static_cast<std::size_t>(g)};
  Traffic t = c == Collective::reduce_scatter
                  ? ring_reduce_scatter_traffic(local, g, count, dtype, seg)
                  : ring_all_gather_traffic(local, g, count, dtype, seg);
  t += inner_->collective_traffic(c, endpoint / g, groups.size(static_cast<std::size_t>(local)),
                                  dtype);
  return t;
}

double HierarchicalScheme::collective_model_time(Collective c, std::size_t bytes,
                                                 const Topology& topology) const {
  if (c == Collective::all_reduce || !provides(c)) {
    return Scheme::collective_model_time(c, bytes, topology);
  }
  if (c == Collective::broadcast) {
    return pipelined_broadcast_model_time(
        topology, workers(), [this](int r) { return broadcast_links(r); }, bytes,
        options().segment_bytes);
  }
  // One of the all-reduce's intra-node phases and the inner collective.
  return slowest_node_ring_phase(bytes, topology) +
         (nodes() > 1 ? inner_->collective_model_time(c, bytes / static_cast<std::size_t>(
                                                                     options().ranks_per_node),
                                                    between_nodes(topology))
                      : 0.0);
}

}  // namespace gradex
