#include "allreduce/pipelined_broadcast.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>

#include "allreduce/request_window.h"
#include "allreduce/segments.h"
#include "common/cost_model.h"

namespace gradex {

BroadcastLinks chain_links(int rank, int n, int root) {
  const int pos = (rank - root + n) % n;
  BroadcastLinks links;
  if (pos > 0) links.parent = (rank - 1 + n) % n;
  if (pos < n - 1) links.children.push_back((rank + 1) % n);
  return links;
}

// Segment j: wait for it from the parent (posting the receive of segment
// j + kSegmentsAhead), then send it to every child in order. Sends more
// than kSegmentsAhead segments old are waited for before the next.
void pipelined_broadcast(Comm& comm, Tensor data, const BroadcastLinks& links,
                         std::size_t segment_bytes, Tag tag) {
  if (data.count == 0) return;
  const Segmentation seg(data.count, segment_bytes, data.dtype);
  const bool has_parent = links.parent >= 0;
  std::deque<Request> receives;
  auto post = [&](std::size_t j) {
    const Tensor t = seg.of(data, j);
    receives.push_back(comm.irecv(links.parent, t.data, t.bytes(), tag));
  };
  if (has_parent) {
    for (std::size_t j = 0; j < std::min(seg.count, kSegmentsAhead); ++j) post(j);
  }
  RequestWindow sends(kSegmentsAhead * std::max<std::size_t>(1, links.children.size()));
  for (std::size_t j = 0; j < seg.count; ++j) {
    if (has_parent) {
      comm.wait(receives.front());
      receives.pop_front();
      if (j + kSegmentsAhead < seg.count) post(j + kSegmentsAhead);
    }
    const Tensor t = seg.of(data, j);
    for (int child : links.children) sends.push(comm, comm.isend(child, t.data, t.bytes(), tag));
  }
  sends.drain(comm);
}

Traffic pipelined_broadcast_traffic(const BroadcastLinks& links, std::size_t count, DType dtype,
                                    std::size_t segment_bytes) {
  Traffic t;
  if (count == 0) return t;
  const Segmentation seg(count, segment_bytes, dtype);
  const std::uint64_t bytes = count * dtype_size(dtype);
  const std::uint64_t children = links.children.size();
  if (links.parent >= 0) {
    t.bytes_received = bytes;
    t.messages_received = seg.count;
  }
  t.bytes_sent = children * bytes;
  t.messages_sent = children * seg.count;
  return t;
}

double pipelined_broadcast_model_time(const Topology& topology, int n,
                                      const std::function<BroadcastLinks(int)>& links_of,
                                      std::size_t bytes, std::size_t segment_bytes) {
  if (n <= 1 || bytes == 0) return 0;
  const double seg = static_cast<double>(std::min(bytes, segment_bytes));
  const double segments = std::ceil(static_cast<double>(bytes) / seg);
  auto transfer = [&](const LinkSpec& l) {
    return l.unlimited() ? 0.0 : l.wire_bytes(seg) / l.bytes_per_second;
  };
  std::vector<BroadcastLinks> links(static_cast<std::size_t>(n));
  int root = 0;
  for (int r = 0; r < n; ++r) {
    links[static_cast<std::size_t>(r)] = links_of(r);
    if (links[static_cast<std::size_t>(r)].parent < 0) root = r;
  }
  // Breadth first from the root: the first segment's arrival at each rank.
  std::vector<double> arrival(static_cast<std::size_t>(n), 0.0);
  std::vector<int> order{root};
  double last = 0;
  double pace = 0;
  // A port's time per segment, summed over every sender using it (a
  // node's shared NIC carries all its ranks' inter-node segments).
  std::map<PortId, double> busy;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const int r = order[i];
    std::map<PortId, double> queued;  // this rank's earlier children, per port
    for (int child : links[static_cast<std::size_t>(r)].children) {
      const LinkSpec& l = topology.link(r, child);
      const PortId port = port_to(topology, r, child);
      queued[port] += transfer(l);
      busy[port] += transfer(l);
      const double at = arrival[static_cast<std::size_t>(r)] + queued[port] + l.delay(seg);
      arrival[static_cast<std::size_t>(child)] = at;
      last = std::max(last, at);
      order.push_back(child);
    }
  }
  for (const auto& [port, seconds] : busy) pace = std::max(pace, seconds);
  return last + (segments - 1) * pace;
}

}  // namespace gradex
