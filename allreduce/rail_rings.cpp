#include "allreduce/rail_rings.h"

#include <algorithm>
#include <memory>

#include "allreduce/ring.h"
#include "common/cost_model.h"
#include "common/errors.h"
#include "common/reduce.h"

namespace gradex {

std::vector<int> rail_ring_order(int channel, int workers, int per_node) {
  GRADEX_ENFORCE(per_node >= 1 && workers >= 1, "rail rings over ", workers, " ranks in nodes of ",
                 per_node);
  std::vector<int> order;
  order.reserve(static_cast<std::size_t>(workers));
  for (int first = 0; first < workers; first += per_node) {
    const int here = std::min(per_node, workers - first);
    for (int i = 0; i < here; ++i) order.push_back(first + (channel + i) % here);
  }
  return order;
}

int rail_ring_position(int channel, int workers, int per_node, int rank) {
  GRADEX_ENFORCE(rank >= 0 && rank < workers, "rank ", rank, " of ", workers);
  const int first = rank / per_node * per_node;
  const int here = std::min(per_node, workers - first);
  // rail_ring_order puts first + (channel + i) % here at first + i.
  return first + ((rank - first - channel) % here + here) % here;
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
  const BlockSplit split{data.count, static_cast<std::size_t>(g)};
  std::vector<std::unique_ptr<SubComm>> groups;
  std::vector<Comm*> rings;
  std::vector<Tensor> parts;
  for (int c = 0; c < g; ++c) {
    const auto k = static_cast<std::size_t>(c);
    groups.push_back(std::make_unique<SubComm>(comm, rail_ring_order(c, workers(), g),
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
    const int position = rail_ring_position(c, workers(), g, endpoint);
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
  for (int c = 0; c < g; ++c) rings.push_back(rail_ring_order(c, n, g));
  return rings_time(topology, rings, static_cast<double>(bytes) / g / n, 2 * (n - 1));
}

}  // namespace gradex
