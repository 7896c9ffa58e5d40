#include "transport/sim/network.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "common/errors.h"

namespace gradex::sim {

// Port layout, for E endpoints, M inter-node NIC owners and L leaves:
//   [0, E) intra egress, [E, 2E) intra ingress,
//   [2E, 2E+M) inter egress, [2E+M, 2E+2M) inter ingress,
//   [2E+2M, 2E+2M+L) leaf uplinks, [2E+2M+L, 2E+2M+2L) leaf downlinks.
Network::Network(Topology topology, Scheduler schedule, bool settle_stars_directly)
    : topology_(std::move(topology)),
      schedule_(std::move(schedule)),
      settle_stars_directly_(settle_stars_directly) {
  const int e = topology_.endpoints();
  inter_owners_ = e;
  if (topology_.nic_per_node) {
    inter_owners_ = 0;
    for (int n : topology_.node_of) inter_owners_ = std::max(inter_owners_, n + 1);
  }
  const std::vector<double> leaf_rates = topology_.leaf_rates();
  leaves_ = static_cast<int>(leaf_rates.size());
  first_leaf_port_ = 2 * e + 2 * inter_owners_;
  ports_.resize(static_cast<std::size_t>(first_leaf_port_ + 2 * leaves_));
  for (int l = 0; l < leaves_; ++l) {
    ports_[static_cast<std::size_t>(first_leaf_port_ + l)].capacity = leaf_rates[static_cast<std::size_t>(l)];
    ports_[static_cast<std::size_t>(first_leaf_port_ + leaves_ + l)].capacity =
        leaf_rates[static_cast<std::size_t>(l)];
  }
  for (int i = 0; i < 2 * e; ++i) ports_[static_cast<std::size_t>(i)].capacity = topology_.intra.bytes_per_second;
  for (int i = 2 * e; i < 2 * e + 2 * inter_owners_; ++i) {
    ports_[static_cast<std::size_t>(i)].capacity = topology_.inter.bytes_per_second;
  }
  // A switch's ports take what the switch reduces per port: on the GPUs'
  // node (NVLS) their intra ports carry it, on a node of their own (SHARP)
  // their NICs.
  for (const Topology::ReducingSwitch& sw : topology_.switches) {
    const double rate = sw.link.bytes_per_second;
    for (int s = sw.first; s < sw.first + sw.ports; ++s) {
      const int owner = topology_.nic_per_node ? topology_.node_of.at(s) : s;
      ports_[static_cast<std::size_t>(s)].capacity = rate;
      ports_[static_cast<std::size_t>(e + s)].capacity = rate;
      if (sw.in_node) continue;
      ports_[static_cast<std::size_t>(2 * e + owner)].capacity = rate;
      ports_[static_cast<std::size_t>(2 * e + inter_owners_ + owner)].capacity = rate;
    }
  }
}

bool Network::limited(int src, int dst) const {
  return src != dst && !topology_.link(src, dst).unlimited();
}

double Network::latency(int src, int dst, std::size_t bytes, const char* protocol) const {
  return src == dst ? 0 : topology_.link(src, dst).delay(static_cast<double>(bytes), protocol);
}

int Network::egress_port(int src, int dst) const {
  if (topology_.same_node(src, dst)) return src;
  const int owner = topology_.nic_per_node ? topology_.node_of.at(src) : src;
  return 2 * topology_.endpoints() + owner;
}

int Network::ingress_port(int src, int dst) const {
  const int e = topology_.endpoints();
  if (topology_.same_node(src, dst)) return e + dst;
  const int owner = topology_.nic_per_node ? topology_.node_of.at(dst) : dst;
  return 2 * e + inter_owners_ + owner;
}

int Network::route(int src, int dst, std::array<int, 4>& ports) const {
  int n = 0;
  ports[static_cast<std::size_t>(n++)] = egress_port(src, dst);
  if (topology_.crosses_spine(src, dst)) {
    const int up = topology_.leaf_of(src), down = topology_.leaf_of(dst);
    if (up >= 0) ports[static_cast<std::size_t>(n++)] = first_leaf_port_ + up;
    if (down >= 0) ports[static_cast<std::size_t>(n++)] = first_leaf_port_ + leaves_ + down;
  }
  ports[static_cast<std::size_t>(n++)] = ingress_port(src, dst);
  return n;
}

void Network::prefetch_route(int src, int dst) const {
  if (!limited(src, dst)) return;
  std::array<int, 4> ports{};
  const int n = route(src, dst, ports);
  for (int i = 0; i < n; ++i) {
    __builtin_prefetch(&ports_[static_cast<std::size_t>(ports[static_cast<std::size_t>(i)])]);
  }
}

void Network::prefetch_flow(int flow, bool ports) const {
  if (flow < 0 || static_cast<std::size_t>(flow) >= flows_.size()) return;
  const Flow& f = flows_[static_cast<std::size_t>(flow)];
  if (!ports) {
    __builtin_prefetch(&f);
    __builtin_prefetch(reinterpret_cast<const char*>(&f + 1) - 1);  // it may straddle two lines
    return;
  }
  for (int i = 0; i < f.port_count && i < 4; ++i) {
    __builtin_prefetch(&ports_[static_cast<std::size_t>(f.ports[static_cast<std::size_t>(i)])]);
  }
}

std::int64_t Network::pair_key(int src, int dst) const {
  return static_cast<std::int64_t>(src) * topology_.endpoints() + dst;
}

void Network::mark_dirty(int port) {
  Port& p = ports_[static_cast<std::size_t>(port)];
  if (!p.dirty) {
    p.dirty = true;
    dirty_.push_back(port);
  }
}

int Network::start(int src, int dst, std::size_t bytes, double now, const char* protocol) {
  GRADEX_ENFORCE(limited(src, dst), "flow on an unlimited link ", src, " -> ", dst);
  int id;
  if (!free_flows_.empty()) {
    id = free_flows_.back();
    free_flows_.pop_back();
  } else {
    id = static_cast<int>(flows_.size());
    flows_.emplace_back();
  }
  Flow& f = flows_[static_cast<std::size_t>(id)];
  const std::uint64_t version = f.version + 1;
  // The link carries the payload and its protocol's share of flags and
  // headers.
  const double wire = topology_.link(src, dst).wire_bytes(static_cast<double>(bytes), protocol);
  f = Flow{};
  f.src = src;
  f.dst = dst;
  f.port_count = route(src, dst, f.ports);
  f.remaining = wire;
  f.updated = now;
  f.version = version;
  f.active = true;
  for (int i = 0; i < f.port_count; ++i) {
    Port& port = ports_[static_cast<std::size_t>(f.ports[static_cast<std::size_t>(i)])];
    // A flow that had this port to itself shares it now: whatever star it
    // was in is one no longer. While no port is a star's hub there is none
    // to forget, and the flow's record is not read (a hybrid PS's ring
    // flows start beside its pushes, whose stars the ring breaks at once).
    if (star_hubs_ > 0 && port.flows.size() == 1) {
      const Flow& alone = flows_[static_cast<std::size_t>(port.flows.front())];
      for (int j = 0; j < alone.port_count; ++j) {
        set_star_flows(alone.ports[static_cast<std::size_t>(j)], 0);
      }
    }
    port.flows.push_back(id);
    mark_dirty(f.ports[static_cast<std::size_t>(i)]);
  }
  started_.push_back(id);
  ++active_;
  return id;
}

void Network::detach(int port, int flow) {
  auto& list = ports_[static_cast<std::size_t>(port)].flows;
  list.erase(std::find(list.begin(), list.end(), flow));
  // A port left without flows is a component of its own with nothing to
  // rate: settling it would walk it for nothing (half of a ring's settles).
  if (!list.empty()) mark_dirty(port);
}

bool Network::current(int flow, std::uint64_t version) const {
  const Flow& f = flows_[static_cast<std::size_t>(flow)];
  return f.active && f.version == version;
}

void Network::finish(int flow) {
  Flow& f = flows_[static_cast<std::size_t>(flow)];
  f.active = false;
  ended_.emplace_back(pair_key(f.src, f.dst), f.filled);
  ended_flows_.push_back(flow);
  for (int i = 0; i < f.port_count; ++i) detach(f.ports[static_cast<std::size_t>(i)], flow);
  free_flows_.push_back(flow);
  --active_;
}

void Network::hand_over(int flow, std::size_t bytes, double now, const char* protocol) {
  Flow& f = flows_[static_cast<std::size_t>(flow)];
  f.remaining = topology_.link(f.src, f.dst).wire_bytes(static_cast<double>(bytes), protocol);
  f.updated = now;
  f.rate = f.filled;
  f.version += 1;
  schedule_(now + f.remaining / f.rate, flow, f.version);
}

void Network::settle(double now) {
  if (dirty_.empty() || (settle_stars_directly_ && endings_leave_rates())) {
    // Finished flows left their ports empty, or took nothing from the
    // others: nothing to rate.
    for (int p : dirty_) ports_[static_cast<std::size_t>(p)].dirty = false;
    dirty_.clear();
    ended_.clear();
    ended_flows_.clear();
    return;
  }
  const bool replacing = settle_stars_directly_ && pair_replacements();
  ++stamp_;
  std::vector<int>& ports = component_ports_;
  std::vector<int>& flows = component_flows_;
  std::vector<int>& newcomers = component_newcomers_;
  std::vector<int>& stack = stack_scratch_;
  // While no port is a star's hub there is none to settle directly (a
  // ring never has one): nothing to count, nothing to look up.
  const bool hubs = star_hubs_ > 0;
  if (hubs) {
    count_star_joiners();
  } else {
    started_.clear();
  }
  for (int seed : dirty_) {
    ports_[static_cast<std::size_t>(seed)].dirty = false;
    if (ports_[static_cast<std::size_t>(seed)].mark == stamp_) continue;
    if (settle_stars_directly_ && hubs) {
      if (const int hub = star_hub_of(seed); hub >= 0 && settle_star(hub, now)) continue;
    }
    // The connected component of `seed` (ports joined by shared flows):
    // only these rates can have changed.
    ports.clear();
    flows.clear();
    newcomers.clear();
    stack.assign(1, seed);
    ports_[static_cast<std::size_t>(seed)].mark = stamp_;
    while (!stack.empty()) {
      const int p = stack.back();
      stack.pop_back();
      ports.push_back(p);
      for (int id : ports_[static_cast<std::size_t>(p)].flows) {
        const Flow& f = flows_[static_cast<std::size_t>(id)];
        if (f.ports[0] == p) {  // each flow once, via its egress
          flows.push_back(id);
          if (f.rate == 0) newcomers.push_back(id);
        }
        for (int i = 0; i < f.port_count; ++i) {
          const int other = f.ports[static_cast<std::size_t>(i)];
          if (ports_[static_cast<std::size_t>(other)].mark != stamp_) {
            ports_[static_cast<std::size_t>(other)].mark = stamp_;
            stack.push_back(other);
          }
        }
      }
    }
    if (replacing || (settle_stars_directly_ && flows.size() > 1 && ended_.empty() &&
                      rate_newcomers_above_their_ports(newcomers))) {
      // Only the newcomers (not yet given a rate) change, and they are
      // rescheduled in the walk's order, as the filling would: completions
      // at one instant are processed in the order they were scheduled.
      for (int id : newcomers) reschedule(id, flows_[static_cast<std::size_t>(id)].filled, now);
      continue;
    }
    // Whatever star these ports were part of may be gone: rebalance_star
    // says again if it still is one.
    for (int p : ports) set_star_flows(p, 0);
    rebalance(ports, flows, now);
  }
  dirty_.clear();
  ended_.clear();
  ended_flows_.clear();
}

bool Network::endings_leave_rates() const {
  if (!started_.empty() || ended_flows_.empty()) return false;
  for (int id : ended_flows_) {
    const Flow& f = flows_[static_cast<std::size_t>(id)];
    if (!(f.filled > 0)) return false;
    for (int i = 0; i < f.port_count; ++i) {
      for (int other : ports_[static_cast<std::size_t>(f.ports[static_cast<std::size_t>(i)])].flows) {
        const double rate = flows_[static_cast<std::size_t>(other)].filled;
        if (!(rate > 0 && rate < f.filled)) return false;
      }
    }
  }
  return true;
}

bool Network::rate_newcomers_above_their_ports(const std::vector<int>& newcomers) {
  std::vector<double>& levels = levels_scratch_;
  std::vector<double>& rates = rate_scratch_;
  rates.clear();
  for (int id : newcomers) {
    const Flow& g = flows_[static_cast<std::size_t>(id)];
    double rate = std::numeric_limits<double>::infinity();
    double highest = 0;  // of the other flows on its ports
    for (int i = 0; i < g.port_count; ++i) {
      const Port& port = ports_[static_cast<std::size_t>(g.ports[static_cast<std::size_t>(i)])];
      levels.clear();
      for (int other : port.flows) {
        if (other == id) continue;
        const Flow& h = flows_[static_cast<std::size_t>(other)];
        if (h.rate == 0 || !(h.filled > 0)) return false;  // another newcomer: they interact
        levels.push_back(h.filled);
      }
      // The filling freezes the others in the order of their rates,
      // taking each from what the port has left, as here; the port must
      // offer more than the next of them meanwhile, or it would freeze
      // them itself (a tie would be settled by the walk's order). In exact
      // arithmetic the new flow's rate above them all implies it; checked
      // here as computed, rounding included.
      //
      // The filling gives the port the level being frozen when its share
      // comes within kSameRate of it (level_or_above): then the new flow
      // would freeze at that level, so its share must clear each level by
      // more than that.
      std::sort(levels.begin(), levels.end());
      PortLedger ledger(port.capacity, static_cast<int>(levels.size()) + 1);
      for (const double level : levels) {
        if (!(ledger.share() >= level * (1 + kSameRate))) return false;
        ledger.freeze(level);
      }
      rate = std::min(rate, ledger.left());  // its share once it is the port's last unfrozen flow
      if (!levels.empty()) highest = std::max(highest, levels.back());
    }
    if (!(rate >= highest * (1 + kSameRate) && rate > 0)) return false;
    rates.push_back(rate);
  }
  if (rates.empty()) return false;
  for (std::size_t i = 0; i < newcomers.size(); ++i) {
    flows_[static_cast<std::size_t>(newcomers[i])].filled = rates[i];
  }
  return true;
}

bool Network::pair_replacements() {
  if (started_.size() != ended_.size()) return false;
  std::vector<std::pair<std::int64_t, int>>& started = started_keys_;
  started.clear();
  for (int id : started_) {
    const Flow& f = flows_[static_cast<std::size_t>(id)];
    started.emplace_back(pair_key(f.src, f.dst), id);
  }
  // Both sorted by endpoints, then paired in order. (The simulated world
  // keeps one flow per pair of endpoints, its messages queued behind it;
  // where a pair has several, they cross the same ports, the filling gives
  // them one rate, and which newcomer takes which predecessor's is alike.)
  std::sort(started.begin(), started.end());
  std::sort(ended_.begin(), ended_.end());
  for (std::size_t i = 0; i < started.size(); ++i) {
    if (started[i].first != ended_[i].first) return false;
  }
  for (std::size_t i = 0; i < started.size(); ++i) {
    flows_[static_cast<std::size_t>(started[i].second)].filled = ended_[i].second;
  }
  return true;
}

// A server's NIC taking one push from each of k workers is a star, and
// while the pushes pipeline each instant typically sees one push end and
// the same worker's next begin: the hub still has k flows, every rate
// stays capacity / k, and only the new flow needs one. Walking the star to
// find that out costs k; this finds it from the flows that started. A star
// (each flow's other ports carrying that flow alone) changes only as flows
// leave its hub (it then has fewer), join it (they started now) or start
// beside one of its flows on that flow's own port (start() then forgets
// the star). So a hub with as many flows as before and one joiner, alone
// on its other ports, is the same star.
void Network::count_star_joiners() {
  const auto hub_at = [&](int p) -> Port* {
    Port& hub = ports_[static_cast<std::size_t>(p)];
    if (hub.star_flows == 0) return nullptr;
    if (hub.joined_mark != stamp_) {
      hub.joined_mark = stamp_;
      hub.joiner = kNoJoiner;
    }
    return &hub;
  };
  for (int id : started_) {
    const Flow& f = flows_[static_cast<std::size_t>(id)];
    if (!f.active) continue;
    Port* hubs[4] = {};
    int hub_count = 0;
    bool alone = true;  // on each of its ports but a hub's
    for (int i = 0; i < f.port_count; ++i) {
      const int p = f.ports[static_cast<std::size_t>(i)];
      if (Port* hub = hub_at(p)) {
        hubs[hub_count++] = hub;
        continue;
      }
      if (ports_[static_cast<std::size_t>(p)].flows.size() != 1) alone = false;
    }
    if (hub_count == 1 && alone) {
      Port& hub = *hubs[0];
      hub.joiner = hub.joiner == kNoJoiner ? id : kStarChanged;
      continue;
    }
    for (int h = 0; h < hub_count; ++h) hubs[h]->joiner = kStarChanged;  // between two hubs, or not alone
  }
  started_.clear();
}

int Network::star_hub_of(int seed) const {
  const Port& port = ports_[static_cast<std::size_t>(seed)];
  if (port.star_flows > 0) return seed;
  if (port.flows.size() != 1) return -1;
  const Flow& f = flows_[static_cast<std::size_t>(port.flows.front())];
  for (int i = 0; i < f.port_count; ++i) {
    const int p = f.ports[static_cast<std::size_t>(i)];
    if (ports_[static_cast<std::size_t>(p)].star_flows > 0) return p;
  }
  return -1;
}

bool Network::settle_star(int hub_port, double now) {
  Port& hub = ports_[static_cast<std::size_t>(hub_port)];
  if (hub.joined_mark != stamp_ || hub.joiner < 0 ||
      static_cast<int>(hub.flows.size()) != hub.star_flows) {
    return false;
  }
  const Flow& f = flows_[static_cast<std::size_t>(hub.joiner)];
  // rebalance_star's share and its test that every other port offers more.
  const double share = hub.capacity / hub.star_flows;
  for (int i = 0; i < f.port_count; ++i) {
    const int p = f.ports[static_cast<std::size_t>(i)];
    if (p != hub_port && !(ports_[static_cast<std::size_t>(p)].capacity > share)) return false;
  }
  for (int i = 0; i < f.port_count; ++i) ports_[static_cast<std::size_t>(f.ports[static_cast<std::size_t>(i)])].mark = stamp_;
  reschedule(hub.joiner, share, now);
  return true;
}

namespace {
// A port's share once a flow through it froze at `level`: never below the
// level (in exact arithmetic it cannot be: the frozen flow took the
// smallest share), and the level itself when within Network::kSameRate of
// it, so that the port's flows freeze at the level too, at exactly the
// rate of the flows that froze before them.
double level_or_above(double share, double level) {
  return share < level * (1 + Network::kSameRate) ? level : share;
}
}  // namespace

// Max-min fair rates by progressive filling: the port offering the smallest
// equal share to its unfrozen flows fixes their rate; subtract it from
// their other ports and repeat. The ports wait in a heap ordered by (share,
// slot), so each round finds its bottleneck in O(log ports) and ties go to
// the earliest slot. A port's share only grows as flows freeze (a frozen
// flow took the smallest share; level_or_above), so a port is pushed again
// with its new share and its stale entries are skipped.
void Network::rebalance(const std::vector<int>& ports, const std::vector<int>& flows, double now) {
  if (flows.empty()) return;  // a port whose last flow finished
  if (flows.size() == 1) {
    // One flow alone on its ports (a ring's steady state): the filling
    // below would give it the smallest capacity exactly (each port offers
    // capacity / 1), so skip the heap.
    const Flow& f = flows_[static_cast<std::size_t>(flows[0])];
    double rate = ports_[static_cast<std::size_t>(f.ports[0])].capacity;
    for (int i = 1; i < f.port_count; ++i) {
      rate = std::min(rate, ports_[static_cast<std::size_t>(f.ports[static_cast<std::size_t>(i)])].capacity);
    }
    reschedule(flows[0], rate, now);
    return;
  }
  if (rebalance_star(ports, flows, now)) return;
  // Every port offering the same share (a window of messages from every
  // rank to as many others, all at one step): the filling would pop one,
  // freeze its flows at that share, and find every other port's share
  // within kSameRate of it (level_or_above), so every flow gets exactly
  // that share. Give it directly, without the heap.
  const double first = ports_[static_cast<std::size_t>(ports[0])].capacity /
                       static_cast<double>(ports_[static_cast<std::size_t>(ports[0])].flows.size());
  bool uniform = true;
  for (int p : ports) {
    const Port& port = ports_[static_cast<std::size_t>(p)];
    if (port.capacity / static_cast<double>(port.flows.size()) != first) {
      uniform = false;
      break;
    }
  }
  if (uniform) {
    for (int flow : flows) reschedule(flow, first, now);
    return;
  }
  std::vector<PortLedger>& share = share_scratch_;
  share.resize(ports.size());
  for (std::size_t i = 0; i < ports.size(); ++i) {
    Port& p = ports_[static_cast<std::size_t>(ports[i])];
    share[i] = PortLedger(p.capacity, static_cast<int>(p.flows.size()));
    share[i].offered = share[i].share();
    p.slot = static_cast<int>(i);
  }
  for (std::size_t i = 0; i < flows.size(); ++i) {
    Flow& f = flows_[static_cast<std::size_t>(flows[i])];
    f.slot = static_cast<int>(i);
    f.frozen = false;
  }
  std::vector<double>& rate = rate_scratch_;
  rate.assign(flows.size(), 0);

  using Entry = std::pair<double, int>;  // (share offered, port slot)
  std::vector<Entry>& heap = heap_scratch_;
  heap.clear();
  const auto later = std::greater<Entry>{};
  for (std::size_t i = 0; i < ports.size(); ++i) {
    if (share[i].unfrozen > 0) heap.emplace_back(share[i].offered, static_cast<int>(i));
  }
  std::make_heap(heap.begin(), heap.end(), later);

  std::size_t remaining = flows.size();
  while (remaining > 0) {
    GRADEX_ENFORCE(!heap.empty(), "max-min filling found no bottleneck");
    std::pop_heap(heap.begin(), heap.end(), later);
    const auto [best_share, best] = heap.back();
    heap.pop_back();
    const PortLedger& b = share[static_cast<std::size_t>(best)];
    if (b.unfrozen == 0 || b.offered != best_share) continue;  // stale
    for (int id : ports_[static_cast<std::size_t>(ports[static_cast<std::size_t>(best)])].flows) {
      Flow& f = flows_[static_cast<std::size_t>(id)];
      if (f.frozen) continue;
      f.frozen = true;
      rate[static_cast<std::size_t>(f.slot)] = best_share;
      --remaining;
      for (int i = 0; i < f.port_count; ++i) {
        const int p = f.ports[static_cast<std::size_t>(i)];
        const int slot = ports_[static_cast<std::size_t>(p)].slot;
        PortLedger& s = share[static_cast<std::size_t>(slot)];
        s.freeze(best_share);
        if (slot != best && s.unfrozen > 0) {
          s.offered = level_or_above(s.share(), best_share);
          heap.emplace_back(s.offered, slot);
          std::push_heap(heap.begin(), heap.end(), later);
        }
      }
    }
  }

  for (std::size_t i = 0; i < flows.size(); ++i) reschedule(flows[i], rate[i], now);
}

// A star: one hub port that every flow of the component crosses (a PS
// server's NIC taking every worker's push), each flow's other ports its
// own. Filling would first pop the hub, offering capacity / k to its k
// flows, when every other port offers more (each its whole capacity), and
// freeze them all at that share: give it to them directly, without the
// heap. A tie with a flow's own port would let that port go first by its
// slot, so it takes the general filling.
bool Network::rebalance_star(const std::vector<int>& ports, const std::vector<int>& flows,
                             double now) {
  const auto k = static_cast<int>(flows.size());
  int hub = -1;
  for (int p : ports) {
    const auto carried = static_cast<int>(ports_[static_cast<std::size_t>(p)].flows.size());
    if (carried == k && hub < 0) {
      hub = p;
    } else if (carried != 1) {
      return false;
    }
  }
  if (hub < 0) return false;
  const double capacity = ports_[static_cast<std::size_t>(hub)].capacity;
  const double share = capacity / k;
  for (int p : ports) {
    if (p != hub && !(ports_[static_cast<std::size_t>(p)].capacity > share)) return false;
  }
  for (int flow : flows) reschedule(flow, share, now);
  set_star_flows(hub, k);
  return true;
}

void Network::set_star_flows(int port, int flows) {
  int& star = ports_[static_cast<std::size_t>(port)].star_flows;
  star_hubs_ += (flows > 0) - (star > 0);
  star = flows;
}

void Network::reschedule(int flow, double rate, double now) {
  Flow& f = flows_[static_cast<std::size_t>(flow)];
  f.filled = rate;
  // Unchanged (up to rounding in the filling): its completion stands.
  // Rescheduling on every last-bit difference would flood the event
  // queue on large connected components (a pipelined tree).
  if (std::abs(f.rate - rate) <= kSameRate * rate) return;
  f.remaining = std::max(0.0, f.remaining - f.rate * (now - f.updated));
  f.updated = now;
  f.rate = rate;
  f.version += 1;
  schedule_(now + f.remaining / f.rate, flow, f.version);
}

}  // namespace gradex::sim
