#include "allreduce/rail_rings.h"

#include <algorithm>
#include <memory>

#include "allreduce/ring.h"
#include "common/cost_model.h"
#include "common/errors.h"
#include "common/reduce.h"

namespace gradex {

GroupMembers rail_ring(int channel, int workers, int per_node) {
  GRADEX_ENFORCE(per_node >= 1 && workers >= 1 && channel >= 0, "rail ring ", channel, " over ",
                 workers, " ranks in nodes of ", per_node);
  // Node by node, each node's ranks from its channel-th on, wrapping
  // within the node (a short last node within its own size).
  return GroupMembers::rule(workers, 0, 1, per_node, channel);
}

RailRingsScheme::RailRingsScheme(SchemeOptions options) : Scheme(std::move(options)) {
  if (this->options().ranks_per_node < 1) {
    throw ConfigError("ranks_per_node", "must be at least 1, got " +
                                            std::to_string(this->options().ranks_per_node));
  }
}

int RailRingsScheme::channels() const { return std::min(options().ranks_per_node, workers()); }

void RailRingsScheme::allreduce(Comm& comm, Tensor data, ReduceOp op) {
  GRADEX_ENFORCE_EQ(comm.size(), workers(), "rail rings run on the workers only");
  const int g = channels();
  if (g == 1) {
    // One rank per node: the one rail ring is every rank in order, `comm`
    // itself, and rail rings are the ring.
    ring_allreduce(comm, data, op, options().segment_bytes, /*slice_bytes=*/0);
    finish_reduce(data, op, comm.size());
    return;
  }
  const BlockSplit split{data.count, static_cast<std::size_t>(g)};
  std::vector<std::unique_ptr<SubComm>> groups;
  std::vector<Comm*> rings;
  std::vector<Tensor> parts;
  for (int c = 0; c < g; ++c) {
    const auto k = static_cast<std::size_t>(c);
    groups.push_back(std::make_unique<SubComm>(comm, rail_ring(c, workers(), g),
                                               static_cast<std::uint32_t>(c)));
    rings.push_back(groups.back().get());
    parts.push_back(data.slice(split.offset(k), split.size(k)));
  }
  ring_allreduce_together(rings, parts, op, options().segment_bytes);
  finish_reduce(data, op, comm.size());
}

Traffic RailRingsScheme::expected_traffic(int endpoint, std::size_t count, DType dtype) const {
  const int g = channels();
  const BlockSplit split{count, static_cast<std::size_t>(g)};
  Traffic t;
  for (int c = 0; c < g; ++c) {
    const int position = rail_ring(c, workers(), g).position_of(endpoint);
    const std::size_t part = split.size(static_cast<std::size_t>(c));
    t += ring_reduce_scatter_traffic(position, workers(), part, dtype, options().segment_bytes);
    t += ring_all_gather_traffic(position, workers(), part, dtype, options().segment_bytes);
  }
  return t;
}

double RailRingsScheme::model_time(std::size_t bytes, const Topology& topology) const {
  const int n = workers();
  const int g = channels();
  if (n <= 1 || bytes == 0) return 0;
  // Every ring moves a block of its part at once each step; the blocks
  // that share a port (a GPU's NVLink, a NIC) take turns on it.
  std::vector<std::vector<int>> rings;
  for (int c = 0; c < g; ++c) rings.push_back(rail_ring(c, n, g).list());
  return rings_time(topology, rings, static_cast<double>(bytes) / g / n, 2 * (n - 1));
}

}  // namespace gradex
