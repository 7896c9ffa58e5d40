#include "allreduce/hierarchical.h"

#include <algorithm>
#include <string>
#include <vector>

#include "allreduce/ring.h"
#include "allreduce/tree.h"
#include "common/errors.h"

namespace gradex {

namespace {

// The inner all-reduce runs on workers only, one per node: schemes with
// server endpoints (or another hierarchy) do not fit there.
constexpr std::string_view kInnerSchemes[] = {"ring", "tree", "halving_doubling"};

constexpr Tag kReduceScatterTag = 0;
constexpr Tag kAllGatherTag = 1;
constexpr Tag kBroadcastTag = 2;  // on the whole group, apart from the sub-groups' tags

}  // namespace

HierarchicalScheme::HierarchicalScheme(SchemeOptions options, const SchemeFactory& make_inner)
    : Scheme(std::move(options)) {
  const int g = this->options().ranks_per_node;
  if (g < 1 || workers() % g != 0) {
    throw ConfigError("ranks_per_node", "must divide the number of workers (" +
                                            std::to_string(workers()) + "), got " +
                                            std::to_string(g));
  }
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

// Rank r = node * G + local. Node k's ranks form one sub-group (tag space
// k); the ranks with the same local index l, one per node, form another
// (tag space nodes + l), so no two concurrent sub-groups share tags.
void HierarchicalScheme::allreduce(Comm& comm, Tensor data, ReduceOp op) {
  GRADEX_ENFORCE_EQ(comm.size(), workers(), "hierarchical runs on the workers only");
  const int g = options().ranks_per_node;
  const int m = nodes();
  const int node = comm.rank() / g;
  const int local = comm.rank() % g;
  const std::size_t seg = options().segment_bytes;
  const ReduceOp combine = combining_op(op);

  std::vector<int> node_ranks, peer_ranks;
  for (int i = 0; i < g; ++i) node_ranks.push_back(node * g + i);
  for (int k = 0; k < m; ++k) peer_ranks.push_back(k * g + local);
  SubComm intra(comm, node_ranks, static_cast<std::uint32_t>(node));
  SubComm inter(comm, peer_ranks, static_cast<std::uint32_t>(m + local));

  // 1. block `local` of G, summed over this node (no-op when G == 1).
  ring_reduce_scatter(intra, data, combine, seg, kReduceScatterTag);
  // 2. the same block summed over all nodes (no-op when there is one node).
  //    avg combines as a sum here and is divided once, below, by n.
  const BlockSplit blocks{data.count, static_cast<std::size_t>(g)};
  inner_->allreduce(inter, data.slice(blocks.offset(local), blocks.size(local)), combine);
  // 3. every block to every rank of the node.
  ring_all_gather(intra, data, seg, kAllGatherTag);
  finish_reduce(data, op, comm.size());
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

double HierarchicalScheme::model_time(std::size_t bytes, const Topology& topology) const {
  const int g = options().ranks_per_node;
  const int m = nodes();
  double intra = 0;  // the slowest node's ring phase
  for (int k = 0; k < m; ++k) {
    std::vector<int> members;
    for (int l = 0; l < g; ++l) members.push_back(k * g + l);
    intra = std::max(intra, ring_phase_model_time(topology, members, static_cast<double>(bytes)));
  }
  // The inner scheme sees one endpoint per node over the inter-node links.
  Topology between = Topology::grouped(m, 1, 0, topology.intra, topology.inter);
  if (topology.nic_per_node && !between.inter.unlimited()) between.inter.bytes_per_second /= g;
  const std::size_t block = bytes / static_cast<std::size_t>(g);
  return 2 * intra + (m > 1 ? inner_->model_time(block, between) : 0.0);
}

bool HierarchicalScheme::provides(Collective c) const {
  const std::string& inter = options().inter_algorithm;
  return c == Collective::all_reduce ||
         (c == Collective::broadcast && (inter == "ring" || inter == "tree"));
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
  if (c != Collective::broadcast || !provides(c)) {
    return Scheme::collective_traffic(c, endpoint, count, dtype);
  }
  if (workers() == 1) return {};
  return pipelined_broadcast_traffic(broadcast_links(endpoint), count, dtype,
                                     options().segment_bytes);
}

double HierarchicalScheme::collective_model_time(Collective c, std::size_t bytes,
                                                 const Topology& topology) const {
  if (c != Collective::broadcast || !provides(c)) {
    return Scheme::collective_model_time(c, bytes, topology);
  }
  return pipelined_broadcast_model_time(
      topology, workers(), [this](int r) { return broadcast_links(r); }, bytes,
      options().segment_bytes);
}

}  // namespace gradex
