#include "common/topology.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <set>
#include <sstream>

#include "common/errors.h"
#include "common/units.h"

namespace gradex {

void check_link_range(const LinkSpec& link, const std::string& bandwidth_field,
                      const std::string& latency_field) {
  const double rate = link.bytes_per_second;
  if (!(rate >= 0) || (rate > 0 && (rate < kMinLinkBytesPerSecond || rate > kMaxLinkBytesPerSecond))) {
    throw ConfigError(bandwidth_field, format_rate(rate) + " is outside the supported range " +
                                           format_rate(kMinLinkBytesPerSecond) + " to " +
                                           format_rate(kMaxLinkBytesPerSecond));
  }
  const double latency = link.latency_seconds;
  if (!(latency >= 0 && latency <= kMaxLinkLatencySeconds)) {
    std::ostringstream got;
    got << latency;
    throw ConfigError(latency_field, got.str() + " s is outside the supported range 0 to " +
                                         std::to_string(static_cast<int>(kMaxLinkLatencySeconds)) + " s");
  }
}

bool same_protocol(const char* a, const char* b) {
  if (a == nullptr || b == nullptr) return a == b;
  return a == b || std::strcmp(a, b) == 0;
}

const LinkProtocol* LinkSpec::choose_protocol(double bytes, const char* collective) const {
  if (collective != nullptr) {
    // A collective's protocol is named by the link's own string (from
    // Topology::protocol_choices) but where a copy says otherwise: compare
    // the pointers first, and the characters only if none is the same.
    for (const LinkProtocol& p : protocols) {
      if (p.name == collective) return &p;
    }
    for (const LinkProtocol& p : protocols) {
      if (same_protocol(p.name, collective)) return &p;
    }
  }
  const LinkProtocol* best = nullptr;
  double best_time = 0;
  for (const LinkProtocol& p : protocols) {
    const double t =
        p.overhead_seconds + (unlimited() ? 0.0 : bytes / (p.efficiency * bytes_per_second));
    if (best == nullptr || t < best_time) {
      best = &p;
      best_time = t;
    }
  }
  return best;
}

LinkSpec LinkSpec::with_protocol(const char* name) const {
  LinkSpec pinned = *this;
  for (const LinkProtocol& p : protocols) {
    if (!same_protocol(p.name, name)) continue;
    pinned.protocols = {p};
    if (p.launch_seconds > 0) pinned.launch_seconds = p.launch_seconds;
    break;
  }
  return pinned;
}

std::uint64_t Topology::Serial::next() {
  static std::atomic<std::uint64_t> counter{0};
  return ++counter;
}

std::vector<const char*> Topology::protocol_choices(bool through_switches) const {
  std::vector<const char*> names;
  auto add = [&](const LinkSpec& link) {
    if (link.protocols.size() < (through_switches ? 1u : 2u)) return;
    for (const LinkProtocol& p : link.protocols) {
      const bool known = std::any_of(names.begin(), names.end(),
                                     [&](const char* n) { return same_protocol(n, p.name); });
      if (!known) names.push_back(p.name);
    }
  };
  if (!through_switches) {
    add(intra);
    add(inter);
  }
  for (const ReducingSwitch& s : switches) add(s.link);
  return names;
}

Topology Topology::with_protocol(const char* name) const {
  Topology pinned = *this;
  pinned.intra = intra.with_protocol(name);
  pinned.inter = inter.with_protocol(name);
  for (ReducingSwitch& s : pinned.switches) s.link = s.link.with_protocol(name);
  return pinned;
}

int Topology::nodes() const {
  return static_cast<int>(std::set<int>(node_of.begin(), node_of.end()).size());
}

double Topology::egress_capacity() const {
  if (!shaped()) return 0;
  std::vector<int> per_node;
  double total = 0;
  for (int e = 0; e < endpoints(); ++e) {
    // A switch's port sends at the switch's rate, whichever node it is on.
    if (const ReducingSwitch* s = switch_of(e)) {
      total += s->link.bytes_per_second;
      continue;
    }
    const int n = node_of[static_cast<std::size_t>(e)];
    if (n >= static_cast<int>(per_node.size())) per_node.resize(static_cast<std::size_t>(n) + 1);
    per_node[static_cast<std::size_t>(n)]++;
  }
  const bool multi_node = nodes() > 1;
  for (int count : per_node) {
    if (count == 0) continue;
    if (count > 1) total += count * intra.bytes_per_second;
    if (multi_node) total += (nic_per_node ? 1 : count) * inter.bytes_per_second;
  }
  return total;
}

int Topology::leaf_of(int endpoint) const {
  if (nodes_per_leaf <= 0) return -1;
  // A switch that sums across nodes is the spine's; one inside a node
  // (NVLS) is under its node's leaf.
  if (const ReducingSwitch* s = switch_of(endpoint); s != nullptr && !s->in_node) return -1;
  return node_of.at(static_cast<std::size_t>(endpoint)) / nodes_per_leaf;
}

std::vector<double> Topology::leaf_rates() const {
  std::vector<double> rate;
  if (nodes_per_leaf <= 0) return rate;
  std::set<int> counted_nodes;  // shared NICs are counted once per node
  for (int e = 0; e < endpoints(); ++e) {
    const int leaf = leaf_of(e);
    if (leaf < 0 || switch_port(e)) continue;
    if (nic_per_node && !counted_nodes.insert(node_of[static_cast<std::size_t>(e)]).second) continue;
    if (leaf >= static_cast<int>(rate.size())) rate.resize(static_cast<std::size_t>(leaf) + 1, 0.0);
    rate[static_cast<std::size_t>(leaf)] += inter.bytes_per_second / oversubscription;
  }
  return rate;
}

void Topology::add_switch(int first, int ports, LinkSpec link, bool in_node,
                          bool ports_multicast) {
  GRADEX_ENFORCE(first >= 1 && ports >= 1 && first + ports <= endpoints(), "switch ports ", first,
                 " to ", first + ports, " of ", endpoints());
  GRADEX_ENFORCE(!in_node || ports <= first, "a switch inside nodes has a port per GPU at most");
  for (const ReducingSwitch& s : switches) {
    GRADEX_ENFORCE(first >= s.first + s.ports || first + ports <= s.first, "switch ports overlap");
  }
  if (in_node && ports_multicast) {
    for (int i = 0; i < ports; ++i) {
      GRADEX_ENFORCE(same_node(i, 0), "a switch whose ports multicast is modelled inside one node");
    }
    link.bytes_per_second *= ports / (ports + 1.0);
  }
  switches.push_back({first, ports, std::move(link), in_node});
  if (in_node) {
    for (int i = 0; i < ports; ++i) {
      node_of[static_cast<std::size_t>(first + i)] = node_of[static_cast<std::size_t>(i)];
    }
  }
}

Topology Topology::grouped(int workers, int per_node, int servers, LinkSpec intra,
                           LinkSpec inter, bool nic_per_node) {
  GRADEX_ENFORCE(workers >= 0 && servers >= 0 && per_node >= 1, "bad topology shape");
  Topology t;
  t.intra = intra;
  t.inter = inter;
  t.nic_per_node = nic_per_node;
  for (int w = 0; w < workers; ++w) t.node_of.push_back(w / per_node);
  const int first_server_node = (workers + per_node - 1) / per_node;
  for (int s = 0; s < servers; ++s) t.node_of.push_back(first_server_node + s);
  return t;
}

LinkShaper::LinkShaper(Topology topology)
    : topology_(std::move(topology)),
      intra_ports_(static_cast<std::size_t>(topology_.endpoints())),
      inter_ports_(static_cast<std::size_t>(
          topology_.nic_per_node
              ? (topology_.node_of.empty()
                     ? 0
                     : *std::max_element(topology_.node_of.begin(), topology_.node_of.end()) + 1)
              : topology_.endpoints())) {}

LinkShaper::Port& LinkShaper::inter_port(int endpoint) {
  const int index = topology_.nic_per_node ? topology_.node_of.at(endpoint) : endpoint;
  return inter_ports_[static_cast<std::size_t>(index)];
}

LinkShaper::Timing LinkShaper::reserve(int src, int dst, std::size_t bytes, double now,
                                       const char* protocol) {
  const bool local = topology_.same_node(src, dst);
  const LinkSpec& spec = topology_.link(src, dst);  // a switch port's rate when one is an end
  const double payload = static_cast<double>(bytes);
  if (src == dst || spec.unlimited()) {
    return {now, now + (src == dst ? 0 : spec.delay(payload, protocol))};
  }
  // A zero-byte message (a barrier's signal) carries nothing to serialise:
  // on a real NIC it slips between another sender's packets instead of
  // queueing behind a whole megabyte booked on the same ingress, which
  // would hold a barrier for a full transfer and skew the next timing.
  if (bytes == 0) return {now, now + spec.delay(payload, protocol)};
  std::lock_guard lock(mutex_);
  Port& out = local ? intra_port(src) : inter_port(src);
  Port& in = local ? intra_port(dst) : inter_port(dst);
  // Each half is booked on its own (as PortShaper does across processes):
  // the message leaves when the sender's egress is free, and crosses the
  // receiver's ingress from then on, once that is free. A sender whose
  // receiver is busy is not held: its NIC sends to other peers meanwhile.
  // Each port at its own rate (a switch's port and a GPU's differ).
  const double wire = spec.wire_bytes(payload, protocol);
  const double start = std::max(now, out.egress_free);
  out.egress_free = start + wire / topology_.port_rate(src, dst);
  in.ingress_free = std::max(start, in.ingress_free) + wire / topology_.port_rate(dst, src);
  return {out.egress_free,
          std::max(out.egress_free, in.ingress_free) + spec.delay(payload, protocol)};
}

}  // namespace gradex
