#include "transport/port_shaper.h"

#include <algorithm>

#include "common/errors.h"

namespace gradex {

PortShaper::PortShaper(Topology topology, int self) : topology_(std::move(topology)), self_(self) {
  if (topology_.nic_per_node) {
    throw ConfigError("/network/nic_per_node",
                      "a NIC shared by a node's endpoints cannot be shaped across processes");
  }
  GRADEX_ENFORCE(self >= 0 && self < topology_.endpoints(), "endpoint ", self, " outside topology");
}

PortShaper::Egress PortShaper::egress(int dst, std::size_t bytes, double now,
                                      const char* protocol) {
  const bool local = topology_.same_node(self_, dst);
  const LinkSpec& spec = topology_.link(self_, dst);
  // Zero bytes occupy no port time (see LinkShaper::reserve).
  if (dst == self_ || spec.unlimited() || bytes == 0) return {now, now};
  std::lock_guard lock(mutex_);
  double& free = local ? intra_egress_free_ : inter_egress_free_;
  const double start = std::max(now, free);
  free = start +
         spec.wire_bytes(static_cast<double>(bytes), protocol) / topology_.port_rate(self_, dst);
  return {start, free};
}

double PortShaper::ingress(int src, std::size_t bytes, double egress_start,
                           const char* protocol) {
  const bool local = topology_.same_node(src, self_);
  const LinkSpec& spec = topology_.link(src, self_);
  if (src == self_) return egress_start;
  const double payload = static_cast<double>(bytes);
  if (spec.unlimited() || bytes == 0) return egress_start + spec.delay(payload, protocol);
  std::lock_guard lock(mutex_);
  double& free = local ? intra_ingress_free_ : inter_ingress_free_;
  const double start = std::max(egress_start, free);
  free = start + spec.wire_bytes(payload, protocol) / topology_.port_rate(self_, src);
  return free + spec.delay(payload, protocol);
}

}  // namespace gradex
