// Where endpoints sit and what links join them: the NIC model of docs/architecture.md.
//
// Each endpoint has full-duplex ports (an egress and an ingress). Endpoints
// of one node talk over the intra-node fabric (think NVLink); endpoints of
// different nodes over inter-node NICs (think Ethernet or InfiniBand), one
// per endpoint or one shared by the whole node. A message occupies the
// sender's egress port and the receiver's ingress port for bytes/rate
// seconds, starting when both are free, then pays the link latency.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace gradex {

// How a message goes over a link, as NCCL's protocols do (LL for small
// messages: cheap to start, half or less of the rate; Simple for large
// ones: the full pipeline, a higher start-up cost): a software cost per
// message on top of the wire latency, and the share of the link rate the
// payload gets (the rest carries flags, headers and synchronisation).
struct LinkProtocol {
  const char* name = "";
  double overhead_seconds = 0;
  double efficiency = 1;  // (0, 1]
  // What a collective run with this protocol costs to launch (NCCL's base
  // latency differs by protocol); 0: the link's launch_seconds.
  double launch_seconds = 0;
};

struct LinkSpec {
  LinkSpec() = default;
  LinkSpec(double rate, double latency, std::vector<LinkProtocol> protos = {}, double launch = 0)
      : bytes_per_second(rate), latency_seconds(latency), protocols(std::move(protos)),
        launch_seconds(launch) {}

  double bytes_per_second = 0;  // 0 means unlimited (no shaping)
  double latency_seconds = 0;
  // Empty: every message at the full rate with no overhead. With several,
  // a collective takes the one its whole run is modelled fastest with, as
  // NCCL's tuner picks one per collective (Scheme::protocol_choice, which
  // makes the size threshold between two protocols a consequence of their
  // figures, not a third figure); a message sent outside a collective takes
  // the one that delivers it soonest.
  std::vector<LinkProtocol> protocols;
  // What a collective run over this link by a GPU library costs once,
  // before its first message: the kernel launch and set-up NCCL's tuning
  // model calls its base latency. 0 for links no such library drives.
  double launch_seconds = 0;

  bool unlimited() const { return bytes_per_second <= 0; }
  // The protocol a message of `bytes` takes: the one named `collective`
  // (the protocol of the collective it belongs to) if the link has it,
  // else the one that delivers it soonest; nullptr when none is modelled.
  // Inline where there is no choice (a link with one protocol, or a
  // network pinned to a collective's, as its model sees it): the cost
  // model asks for every flow, n^2 of them for a PS with a server per
  // worker.
  const LinkProtocol* protocol_for(double bytes, const char* collective = nullptr) const {
    if (protocols.size() <= 1) return protocols.empty() ? nullptr : protocols.data();
    return choose_protocol(bytes, collective);
  }
  // What the link carries for a payload of `bytes`: bytes / efficiency.
  double wire_bytes(double bytes, const char* collective = nullptr) const {
    const LinkProtocol* p = protocol_for(bytes, collective);
    return p == nullptr ? bytes : bytes / p->efficiency;
  }
  // From the last byte leaving the sender to the message being usable at
  // the receiver: the latency plus the protocol's per-message cost.
  double delay(double bytes, const char* collective = nullptr) const {
    const LinkProtocol* p = protocol_for(bytes, collective);
    return latency_seconds + (p == nullptr ? 0.0 : p->overhead_seconds);
  }
  // This link as a collective run with protocol `name` sees it: that
  // protocol alone, and its launch, when the link has it; else unchanged.
  LinkSpec with_protocol(const char* name) const;

 private:
  // protocol_for among several.
  const LinkProtocol* choose_protocol(double bytes, const char* collective) const;
};

// Whether two protocol names are the same (both may be nullptr: none).
bool same_protocol(const char* a, const char* b);

// The range of a shaped link, wide enough for any real network (a slow
// modem to beyond an NVSwitch) and narrow enough that every time computed
// from it stays finite and within a run's timeout arithmetic: 1 KB/s to
// 100 TB/s per direction, latency 0 to 10 s.
inline constexpr double kMinLinkBytesPerSecond = 1e3;
inline constexpr double kMaxLinkBytesPerSecond = 1e14;
inline constexpr double kMaxLinkLatencySeconds = 10;
// Throws ConfigError naming `bandwidth_field` or `latency_field` when a
// shaped link is outside that range (an unlimited link is always fine).
void check_link_range(const LinkSpec& link, const std::string& bandwidth_field,
                      const std::string& latency_field);

struct Topology {
  std::vector<int> node_of;  // node index of each endpoint
  LinkSpec intra;            // between endpoints of one node
  LinkSpec inter;            // between nodes
  bool nic_per_node = false; // inter-node NIC shared by the node's endpoints
  // In-network reduction (the in_network schemes): the ports of switches
  // that sum what reaches them (NVLS inside an NVSwitch node, SHARP in an
  // InfiniBand switch), each a range of endpoints after the workers. A
  // message to or from a port crosses its switch's `link`, whose rate is
  // what the switch reduces per port; the GPU's side is its own port of
  // the node's link (a switch on its node) or its NIC.
  struct ReducingSwitch {
    int first = 0;  // its ports are endpoints [first, first + ports)
    int ports = 0;
    LinkSpec link;
    // Inside nodes (NVLS): port first + i sits on endpoint i's node. Across
    // nodes (SHARP): each port is a node of its own, reached through NICs.
    bool in_node = false;
  };
  std::vector<ReducingSwitch> switches;
  // A second tier (leaf/spine), when nodes_per_leaf > 0: nodes in groups
  // of nodes_per_leaf (in node order) under one leaf switch, whose uplink
  // to the spine carries what the leaf's NICs can send divided by
  // `oversubscription` (1: non-blocking; 4: 4:1), and so does its downlink.
  // A message between nodes under different leaves also crosses its
  // sender's leaf uplink and its receiver's leaf downlink, shared with
  // every other such message. A switch that sums across nodes (SHARP)
  // sits at the spine. Modelled by the simulator and the cost model only.
  int nodes_per_leaf = 0;
  double oversubscription = 1;

  int endpoints() const { return static_cast<int>(node_of.size()); }
  int nodes() const;
  bool same_node(int a, int b) const { return node_of.at(a) == node_of.at(b); }
  // The switch whose port `e` is; nullptr for a GPU (or any endpoint of a
  // topology without switches).
  const ReducingSwitch* switch_of(int e) const {
    for (const ReducingSwitch& s : switches) {
      if (e >= s.first && e < s.first + s.ports) return &s;
    }
    return nullptr;
  }
  bool switch_port(int e) const { return switch_of(e) != nullptr; }
  const LinkSpec& link(int a, int b) const {
    if (!switches.empty()) {
      if (const ReducingSwitch* s = switch_of(a)) return s->link;
      if (const ReducingSwitch* s = switch_of(b)) return s->link;
    }
    return same_node(a, b) ? intra : inter;
  }
  // The rate of `endpoint`'s port toward `peer` (bytes/s, 0: unlimited):
  // the link's, except that a switch's port runs at the switch's and a
  // GPU's port toward a switch at its own link's (NVLink, or its NIC).
  double port_rate(int endpoint, int peer) const {
    if (const ReducingSwitch* s = switch_of(endpoint)) return s->link.bytes_per_second;
    return (same_node(endpoint, peer) ? intra : inter).bytes_per_second;
  }
  bool shaped() const { return !intra.unlimited() || !inter.unlimited(); }
  // A collective's start-up on this network: the larger of its two links'
  // launch costs (a GPU library's collective launches one kernel on every
  // GPU, whichever links it then uses).
  double launch_seconds() const { return std::max(intra.launch_seconds, inter.launch_seconds); }
  // The protocols a collective chooses among: those of every link that
  // offers more than one, each name once, in the order first met. Empty
  // when no link offers a choice. `through_switches`: every message of the
  // collective has a reducing switch's port at one end (the in_network
  // schemes), so only the switches' links count, each with every protocol
  // it has: NVLink SHARP runs Simple alone, and its collective pays
  // Simple's launch however many protocols NVLink offers.
  std::vector<const char*> protocol_choices(bool through_switches = false) const;
  // This network as a collective run with protocol `name` sees it (each
  // link's with_protocol): what its model is computed on.
  Topology with_protocol(const char* name) const;
  // A number no other Topology object of this process has had (a copy gets
  // a new one): what a result computed on this network is cached under
  // (Scheme::protocol_choice). Changing a field keeps it, and leaves such
  // results stale: change a copy of a network a model has been asked about.
  std::uint64_t serial() const { return serial_.value; }
  // The leaf above `endpoint`: -1 without a second tier, or for a switch
  // port across nodes (at the spine).
  int leaf_of(int endpoint) const;
  // Whether a message from a to b crosses the spine: a's leaf uplink (when
  // a has a leaf) and b's leaf downlink (when b has one).
  bool crosses_spine(int a, int b) const {
    return nodes_per_leaf > 0 && !same_node(a, b) && leaf_of(a) != leaf_of(b);
  }
  // Each leaf's uplink (and downlink) rate, by leaf index; empty without a
  // second tier.
  std::vector<double> leaf_rates() const;
  // Sum of egress rates of every port that can carry traffic (intra ports
  // on nodes of two or more endpoints, inter ports when there are two or
  // more nodes): the denominator of utilisation. 0 when unshaped.
  double egress_capacity() const;

  // Makes endpoints [first, first + ports) the ports of a switch that sums,
  // at `link`: port first + i moved onto endpoint i's node when `in_node`
  // (NVLS: with one node of GPUs, all on it), else left on nodes of their
  // own (SHARP, reached through the GPUs' NICs).
  //
  // `ports_multicast`: the scheme's switch ports send each sum to every GPU
  // themselves (in_network's server ports). NVLink SHARP, as NCCL runs it,
  // sends a slice's sum to the GPU that owns the slice, which multicasts it
  // back through the switch (multimem.ld_reduce, then multimem.st): each of
  // the n ports of one node carries its slice once more each way, 1 + 1/n
  // of the payload. A switch inside one node whose ports multicast
  // themselves therefore runs them at n/(n+1) of `link`'s rate, the time
  // that trip takes; a scheme that sends the sum through its owner
  // (in_network_hierarchical) makes the trip in messages of its own.
  void add_switch(int first, int ports, LinkSpec link, bool in_node, bool ports_multicast = false);

  // `workers` endpoints in nodes of `per_node`, then `servers` endpoints on
  // dedicated machines of their own (one node each).
  static Topology grouped(int workers, int per_node, int servers, LinkSpec intra, LinkSpec inter,
                          bool nic_per_node = false);

 private:
  struct Serial {
    Serial() : value(next()) {}
    Serial(const Serial&) : value(next()) {}
    Serial& operator=(const Serial&) {
      value = next();
      return *this;
    }
    static std::uint64_t next();
    std::uint64_t value;
  };
  Serial serial_;
};

// Reserves port time for messages under the model above; thread-safe.
class LinkShaper {
 public:
  explicit LinkShaper(Topology topology);

  struct Timing {
    double sender_free;  // the send completes (egress done)
    double arrival;      // the receive completes
  };
  // A message of `bytes` posted at `now` from src to dst, within a
  // collective run with `protocol` (nullptr: outside one).
  Timing reserve(int src, int dst, std::size_t bytes, double now, const char* protocol = nullptr);
  const Topology& topology() const { return topology_; }

 private:
  struct Port {
    double egress_free = 0;
    double ingress_free = 0;
  };
  Port& intra_port(int endpoint) { return intra_ports_[static_cast<std::size_t>(endpoint)]; }
  Port& inter_port(int endpoint);

  Topology topology_;
  std::mutex mutex_;
  std::vector<Port> intra_ports_;
  std::vector<Port> inter_ports_;  // per endpoint, or per node when shared
};

}  // namespace gradex
