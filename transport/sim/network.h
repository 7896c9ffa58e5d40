// The simulator's network: docs/architecture.md's NIC model (common/topology.h, the
// same Topology and LinkSpec the in-process shaper uses) as a fluid model.
//
// Every endpoint has an intra-node egress and ingress port and an
// inter-node egress and ingress port (or one inter-node pair shared by its
// node when nic_per_node); with a second tier each leaf has an uplink and
// a downlink. A message of S bytes from a to b is a flow over a's egress
// and b's ingress of the link joining them (across the spine also a's
// leaf uplink and b's leaf downlink); concurrent flows
// share each port's rate max-min fairly (progressive filling), so a PS
// server receiving from N workers gives each B/N. When the flow has moved
// its bytes the message still pays the link latency before it arrives.
// Rates are recomputed only for the ports touched since the last
// recomputation, once per instant of virtual time.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "common/topology.h"

namespace gradex::sim {

class Network {
 public:
  // Two rates this close (relative) are one rate: a completion does not
  // move for less, and the filling gives a port whose share came out
  // within it of the level being frozen that level exactly (in exact
  // arithmetic the share cannot be below the level, and flows that share
  // a bottleneck's level end at one instant, not at a spread of instants
  // a rounding apart, each one a settle of the whole component).
  static constexpr double kSameRate = 1e-9;

  // `schedule(t, flow, version)` asks the owner to call finish(flow,
  // version) at virtual time t; stale versions are ignored by finish.
  using Scheduler = std::function<void(double, int, std::uint64_t)>;

  // `settle_stars_directly`: a star that kept its flows but for one that
  // took another's place is settled without walking it (settle_star), and
  // an instant whose new flows all took the place of flows that ended,
  // between the same endpoints, is settled without filling
  // (pair_replacements); false walks and fills every component, as a
  // reference for tests.
  Network(Topology topology, Scheduler schedule, bool settle_stars_directly = true);

  const Topology& topology() const { return topology_; }
  // Starts moving `bytes` from src to dst at `now`, a message of a
  // collective run with `protocol` (LinkSpec::protocol_for); returns the
  // flow id. Only for links with a finite rate and src != dst (callers
  // handle the others as instantaneous).
  int start(int src, int dst, std::size_t bytes, double now, const char* protocol = nullptr);
  bool limited(int src, int dst) const;
  // The delay after the last byte of a message of `bytes` left: the link
  // latency plus its protocol's per-message cost.
  double latency(int src, int dst, std::size_t bytes, const char* protocol = nullptr) const;
  // Recomputes the rates of flows sharing a port with a flow that started
  // or finished, and reschedules their completions.
  void settle(double now);
  // Whether `version` is the current completion event of `flow`.
  bool current(int flow, std::uint64_t version) const;
  // `flow` has moved all its bytes: it is removed.
  void finish(int flow);
  // `flow` has moved all its bytes and the next message between the same
  // endpoints, of `bytes`, leaves at once: the flow carries it on, at the
  // rate last computed for it. The flows on its ports are the same as
  // before, so max-min filling would give every one of them the rate it
  // has (a pipelined tree's flows form one component as wide as the
  // world, which each refill would walk); its completion is scheduled now.
  void hand_over(int flow, std::size_t bytes, double now, const char* protocol = nullptr);
  int active_flows() const { return active_; }
  // Ask the cache for what start(src, dst, ...) will touch (the ports on
  // the route), and for what finishing `flow` will (its record and, once
  // that has arrived, its ports): a simulator that knows its coming events
  // asks ahead, since in a large world they are out of cache.
  void prefetch_route(int src, int dst) const;
  void prefetch_flow(int flow, bool ports) const;

 private:
  // One cache line, its first flows included: a message touches a port
  // at each end.
  struct alignas(64) Port {
    double capacity = 0;
    // Active flows through this port: most ports carry one or two, kept
    // in the port itself (one cache line fewer per message).
    boost::container::small_vector<int, 2> flows;
    bool dirty = false;
    std::uint32_t mark = 0;  // visit stamp of the last settle
    int slot = 0;            // its index in the component being rebalanced
    // Set while the port is the hub of a star (rebalance_star) that no
    // settle has changed since but by a flow that took another's place:
    // the flows it had then. 0 otherwise.
    int star_flows = 0;
    // settle()'s note of the flows joining the star this instant: the one
    // that did, kNoJoiner if none did, kStarChanged if more did or the
    // star changed otherwise; valid while `joined_mark` is the stamp.
    int joiner = kNoJoiner;
    std::uint32_t joined_mark = 0;
  };
  static_assert(sizeof(Port) == 64);
  static constexpr int kNoJoiner = -1;
  static constexpr int kStarChanged = -2;
  struct Flow {
    // Its ports, egress first: egress, [leaf uplink, leaf downlink,] ingress.
    std::array<int, 4> ports{};
    int port_count = 0;
    double remaining = 0;  // bytes, as of `updated`
    double rate = 0;       // bytes per second, 0 until first settled
    // The rate the last filling gave it (`rate` keeps an earlier one that
    // differs by rounding only, to leave its completion event standing).
    double filled = 0;
    int src = 0, dst = 0;
    double updated = 0;
    std::uint64_t version = 0;
    bool active = false;
    int slot = 0;         // its index in the component being rebalanced
    bool frozen = false;  // its rate is fixed in this rebalance
  };

  std::int64_t pair_key(int src, int dst) const;
  int egress_port(int src, int dst) const;
  int ingress_port(int src, int dst) const;
  // The flow's ports in order (as Flow::ports); returns how many.
  int route(int src, int dst, std::array<int, 4>& ports) const;
  void mark_dirty(int port);
  void detach(int port, int flow);
  void rebalance(const std::vector<int>& ports, const std::vector<int>& flows, double now);
  // rebalance() of a component that is a star around one port, exactly as
  // the filling would; false (nothing done) for any other component.
  bool rebalance_star(const std::vector<int>& ports, const std::vector<int>& flows, double now);
  // Before the walk: counts, per star hub, the flows that joined it since
  // the last settle, or marks it changed otherwise.
  void count_star_joiners();
  // The star hub whose component holds `seed`, if one flow took another's
  // place on it and nothing else changed: that flow gets the share the
  // filling would give it, without walking the star. -1 otherwise.
  int star_hub_of(int seed) const;
  bool settle_star(int hub, double now);
  // Whether every flow started since the last settle took the place of
  // one that finished since, between the same endpoints, and no other flow
  // finished. Then every port carries flows between the same endpoints as
  // at the last filling, which would give every flow the rate it has and
  // each newcomer its predecessor's: each newcomer is given that rate
  // (`filled`) here, and settle() reschedules the newcomers in the order
  // of its walk, as the filling would, without filling. (A pipelined
  // tree's rank posts a segment when the one before it has left: its
  // flows form one component as wide as the world, and most of its
  // instants are of this kind.)
  bool pair_replacements();
  // Whether, with no flow started since the last settle, every flow that
  // finished had a higher rate than every other flow on its ports. The
  // filling froze those others before it (by other ports), and nothing it
  // did afterwards touched them, so without it every rate stays as it is:
  // there is nothing to settle. (A hybrid PS's ring flows share their
  // NICs with the slow pushes to a server, which join every NIC into one
  // component as wide as the world; a ring step's flows end together.)
  bool endings_leave_rates() const;
  // Whether, with no flow finished since the last settle, each of a
  // component's new flows `newcomers` (not yet given a rate; the walk
  // collects them, so the component's others are not read again) would be
  // frozen after every other flow on
  // its ports, and their rates let it: each port's share stays above the
  // next of its other flows' rates as they freeze (then none of them, nor
  // anything beyond, changes rate), and the new flow gets what its
  // tightest port has left. Each new flow is given that rate (`filled`),
  // and settle() reschedules the new flows in the order of its walk, as
  // the filling would. (The hybrid PS's ring flows starting beside their
  // NICs' slow pushes.)
  bool rate_newcomers_above_their_ports(const std::vector<int>& newcomers);
  // Sets a port's star_flows, counting the hubs (star_hubs_).
  void set_star_flows(int port, int flows);
  // Gives `flow` its new rate from `now` and schedules its completion,
  // unless the rate did not change.
  void reschedule(int flow, double rate, double now);

  Topology topology_;
  Scheduler schedule_;
  bool settle_stars_directly_ = true;
  int inter_owners_ = 0;  // endpoints, or nodes when nic_per_node
  int first_leaf_port_ = 0;  // leaf uplinks from here, then their downlinks
  int leaves_ = 0;
  std::vector<Port> ports_;
  std::vector<Flow> flows_;
  std::vector<int> free_flows_;
  std::vector<int> dirty_;
  std::vector<int> started_;  // flows started since the last settle
  int star_hubs_ = 0;  // ports whose star_flows is not 0
  // Flows finished since the last settle: their endpoints, keyed as
  // src * endpoints + dst, and the rate the last filling gave them.
  std::vector<std::pair<std::int64_t, double>> ended_;
  std::vector<int> ended_flows_;  // the same flows' ids (no flow reused until a start)
  std::vector<std::pair<std::int64_t, int>> started_keys_;  // pair_replacements' scratch
  std::vector<double> levels_scratch_;  // rate_newcomers_above_their_ports' scratch
  std::uint32_t stamp_ = 0;
  // settle()'s working memory, kept between calls (it runs once per
  // instant of virtual time).
  std::vector<int> component_ports_;
  std::vector<int> component_flows_;
  std::vector<int> component_newcomers_;  // its flows not yet given a rate, in walk order
  std::vector<int> stack_scratch_;
  // rebalance()'s working memory, kept between calls.
  std::vector<double> rate_scratch_;
  std::vector<std::pair<double, int>> heap_scratch_;
  // A port during the filling: what it has left for the flows through it
  // whose rate is not fixed yet. The flows frozen at one level are taken
  // off together, count x level: taken off one by one, a port of
  // thousands of flows (a server on every worker) would pile up a rounding
  // error per flow, and equal shares would come out unequal.
  struct PortLedger {
    double before_level = 0;  // capacity less the flows frozen at lower levels
    double level = 0;         // the level its latest frozen flows froze at
    int at_level = 0;         // how many of them froze at it
    int unfrozen = 0;
    double offered = 0;       // the share it was last filed in the heap with

    PortLedger() = default;
    PortLedger(double capacity, int flows) : before_level(capacity), unfrozen(flows) {}
    void freeze(double rate) {
      if (rate != level) {
        before_level = left();
        level = rate;
        at_level = 0;
      }
      ++at_level;
      --unfrozen;
    }
    double left() const { return std::max(0.0, before_level - at_level * level); }
    double share() const { return left() / unfrozen; }
  };
  std::vector<PortLedger> share_scratch_;
  int active_ = 0;
};

}  // namespace gradex::sim
