// The simulator's fixed points. tests/sim_engine/results.csv holds the
// simulated times of tests/sim_engine/scenario.json (every scheme, nodes
// sharing one NIC, protocol costs, a straggler, up to 36 ranks) as the
// simulator produced them; every column of every row must come out the
// same, to the last printed digit. A faster event engine, a bounded
// posting window or a cheaper matcher changes how the simulator computes,
// never what it computes: if this fails, the change moved simulated time.
// tests/sim_engine/stars does the same where many flows meet at one port,
// tests/sim_engine/channels for schemes with a connection per tag.
// Only a deliberate change of the model regenerates a record:
//   gradex simulate tests/sim_engine/scenario.json -q -o tests/sim_engine
//   gradex simulate tests/sim_engine/stars/scenario.json -q -o tests/sim_engine/stars
//   gradex simulate tests/sim_engine/channels/scenario.json -q -o tests/sim_engine/channels
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <queue>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/topology.h"
#include "transport/sim/network.h"

namespace gradex {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> lines_of(const fs::path& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Simulates `folder`'s scenario.json and compares every row with the
// folder's results.csv, which holds `rows` rows and the header.
void expect_record_reproduced(const fs::path& folder, std::size_t rows) {
  const fs::path dir = fs::temp_directory_path() / ("gradex_sim_engine_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string cmd = std::string(GRADEX_BINARY) + " simulate " +
                          (folder / "scenario.json").string() + " -q -o " +
                          (dir / "out").string() + " > " + (dir / "stdout").string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << std::ifstream(dir / "stdout").rdbuf();
  const std::vector<std::string> recorded = lines_of(folder / "results.csv");
  const std::vector<std::string> now = lines_of(dir / "out" / "results.csv");
  ASSERT_EQ(recorded.size(), rows + 1);
  ASSERT_EQ(now.size(), recorded.size());
  for (std::size_t i = 0; i < recorded.size(); ++i) {
    EXPECT_EQ(now[i], recorded[i]) << "row " << i;
  }
  fs::remove_all(dir);
}

const fs::path kRecords = fs::path(GRADEX_SOURCE_DIR) / "tests" / "sim_engine";

TEST(SimEngine, ReproducesTheRecordedSimulatedTimesExactly) {
  // 13 schemes x 3 worker counts x 4 sizes.
  expect_record_reproduced(kRecords, 156);
}

// Stars (a server's NIC, a switch port) settled without walking them when
// one flow takes another's place (transport/sim/network.cpp): recorded
// with the engine that walked every star.
TEST(SimEngine, ReproducesTheRecordedTimesWhereManyFlowsMeetAtOnePort) {
  // 4 schemes x 2 worker counts x 3 sizes.
  expect_record_reproduced(kRecords / "stars", 24);
}

// Schemes whose hops each have their own connection to a peer
// (Scheme::connection_per_tag): the two in-network schemes across nodes.
TEST(SimEngine, ReproducesTheRecordedTimesOfAConnectionPerTag) {
  // 2 schemes x 2 worker counts x 3 sizes.
  expect_record_reproduced(kRecords / "channels", 12);
}

// A completion the network asked for: the flow's `version` at `time`.
struct Scheduled {
  double time = 0;
  int flow = 0;
  std::uint64_t version = 0;
  bool operator==(const Scheduled&) const = default;
  // Later first out of a max-heap; ties in the order they were asked for
  // are kept by the heap's stable (time, flow, version) order.
  bool operator<(const Scheduled& o) const {
    return std::tie(o.time, o.flow, o.version) < std::tie(time, flow, version);
  }
};

// Two networks fed the same flows, one settling directly what it can and
// one filling every component (settle_stars_directly false): every
// completion either schedules must be the other's, to the last bit and in
// the same order.
struct TwinNetworks {
  TwinNetworks(const Topology& topology, unsigned seed, std::size_t smallest)
      : direct(topology, [this](double t, int f, std::uint64_t v) { direct_log.push_back({t, f, v}); }),
        filled(topology, [this](double t, int f, std::uint64_t v) { filled_log.push_back({t, f, v}); },
               /*settle_stars_directly=*/false),
        rng(seed),
        seed(seed),
        smallest(smallest) {}

  // Compares what both scheduled since the last call and queues it.
  void check() {
    if (time_tolerance > 0) {
      ASSERT_EQ(direct_log.size(), filled_log.size()) << "seed " << seed << ", at " << now;
      for (std::size_t i = seen; i < direct_log.size(); ++i) {
        const Scheduled& d = direct_log[i];
        const Scheduled& f = filled_log[i];
        ASSERT_TRUE(d.flow == f.flow && d.version == f.version &&
                    std::abs(d.time - f.time) <= time_tolerance * f.time)
            << "seed " << seed << ", at " << now << ": flow " << d.flow << " v" << d.version
            << " at " << d.time << " s, filled: flow " << f.flow << " v" << f.version << " at "
            << f.time << " s";
      }
    } else {
      ASSERT_EQ(direct_log, filled_log) << "seed " << seed << ", at " << now;
    }
    for (; seen < direct_log.size(); ++seen) pending.push(direct_log[seen]);
  }
  // Few sizes, so that flows sharing a port at one rate end together.
  std::size_t size() { return smallest << (2 * (rng() % 3)); }
  void start(int src, int dst) {
    if (src == dst) return;
    const std::size_t bytes = size();
    const int id = direct.start(src, dst, bytes, now);
    ASSERT_EQ(filled.start(src, dst, bytes, now), id);
    ends[id] = {src, dst};
  }
  void finish(int flow) {
    direct.finish(flow);
    filled.finish(flow);
    ends.erase(flow);
  }
  void hand_over(int flow) {
    const std::size_t bytes = size();
    direct.hand_over(flow, bytes, now);
    filled.hand_over(flow, bytes, now);
  }
  // The engine settles once an instant, after all of its events.
  void settle() {
    direct.settle(now);
    filled.settle(now);
    check();
  }
  bool current(const Scheduled& s) const {
    EXPECT_EQ(direct.current(s.flow, s.version), filled.current(s.flow, s.version));
    return direct.current(s.flow, s.version);
  }
  // Skips stale completions and moves `now` to the next instant: the
  // earlier of the next completion and the next delayed start. False when
  // there is neither.
  bool next_instant() {
    while (!pending.empty() && !current(pending.top())) pending.pop();
    if (pending.empty() && later.empty()) return false;
    now = pending.empty() ? later.begin()->first
          : later.empty() ? pending.top().time
                          : std::min(pending.top().time, later.begin()->first);
    return true;
  }
  // The completion due now, if any is left (stale ones skipped).
  std::optional<Scheduled> due_now() {
    while (!pending.empty() && pending.top().time == now) {
      const Scheduled next = pending.top();
      pending.pop();
      if (current(next)) return next;
    }
    return std::nullopt;
  }
  void start_after(double delay, int src, int dst) { later.emplace(now + delay, std::pair{src, dst}); }
  // The delayed starts due now.
  void start_delayed() {
    while (!later.empty() && later.begin()->first == now) {
      start(later.begin()->second.first, later.begin()->second.second);
      later.erase(later.begin());
    }
  }

  // 0: every completion to the last bit. Else how far (relative) the
  // times may part: in a component where every port carries many flows, a
  // flow whose rate a settle leaves unchanged keeps its bits where a
  // filling of the component recomputes them along another path of
  // roundings, and a newcomer's rate, taken from the others' on its ports,
  // can then differ from the filling's in the last bits.
  double time_tolerance = 0;
  std::vector<Scheduled> direct_log, filled_log;
  sim::Network direct, filled;
  std::mt19937 rng;
  unsigned seed;
  std::size_t smallest;
  std::map<int, std::pair<int, int>> ends;  // active flow -> (src, dst)
  std::priority_queue<Scheduled> pending;
  std::multimap<double, std::pair<int, int>> later;  // delayed starts
  std::size_t seen = 0;
  double now = 0;
};

// Random traffic on twin networks, one settling stars and instants of
// replacements directly (Network::settle_star,
// Network::pair_replacements): sends into one endpoint (a star), each
// finished flow followed at once by its pair's next (one flow taking
// another's place), hand-overs, and sends to other endpoints that join a
// star or share a sender's port with one, one event in `disturb` on
// average.
void expect_direct_star_settling_matches_filling(const Topology& topology, unsigned seed,
                                                 unsigned disturb) {
  TwinNetworks net(topology, seed, std::size_t{64} << 10);
  std::mt19937& rng = net.rng;
  const int endpoints = topology.endpoints();
  for (int src = 1; src < endpoints; ++src) net.start(src, 0);
  net.settle();
  for (int events = 0; !net.pending.empty() && events < 2000; ++events) {
    const Scheduled next = net.pending.top();
    net.pending.pop();
    if (!net.current(next)) continue;
    net.now = next.time;
    const auto [src, dst] = net.ends.at(next.flow);
    const unsigned roll = rng() % 10;
    if (roll < 3) {
      net.hand_over(next.flow);
    } else {
      net.finish(next.flow);
      // The same pair's next message, or another sender's (which may be
      // sending elsewhere too), or none.
      if (roll < 8) net.start(src, dst);
      if (roll == 8) net.start(1 + static_cast<int>(rng() % (endpoints - 1)), dst);
    }
    // Keep the star populated.
    if (static_cast<int>(net.ends.size()) < endpoints / 2) {
      net.start(1 + static_cast<int>(rng() % (endpoints - 1)), 0);
    }
    if (rng() % disturb == 0) {
      net.start(1 + static_cast<int>(rng() % (endpoints - 1)), static_cast<int>(rng() % 3));
    }
    net.check();
    if (net.pending.empty() || net.pending.top().time > net.now) net.settle();
  }
}

TEST(SimEngine, SettlingAStarDirectlySchedulesWhatFillingWould) {
  const LinkSpec nic{25e9, 1e-6};
  for (unsigned seed = 1; seed <= 10; ++seed) {
    for (unsigned disturb : {3u, 40u}) {
      expect_direct_star_settling_matches_filling(Topology::grouped(12, 1, 0, {}, nic), seed, disturb);
      // Nodes of two sharing a NIC: senders' ports carry two flows.
      expect_direct_star_settling_matches_filling(
          Topology::grouped(12, 2, 0, {100e9, 1e-6}, nic, /*nic_per_node=*/true), seed, disturb);
    }
  }
}

// A hybrid PS's traffic on twin networks, one settling directly what it
// can (Network::endings_leave_rates,
// Network::rate_newcomers_above_their_ports): each sender pushes to
// endpoint 0 and pulls from it, slow flows that join every sender's NIC
// into one component, while ring flows between the senders end and, a
// latency later, start again: instants of endings only and of starts
// only. Sometimes a ring flow is handed over, or a flow starts between
// any two endpoints.
void expect_direct_ring_settling_matches_filling(const Topology& topology, unsigned seed) {
  TwinNetworks net(topology, seed, std::size_t{256} << 10);
  std::mt19937& rng = net.rng;
  const int endpoints = topology.endpoints();
  const int senders = endpoints - 1;  // 1 .. endpoints - 1; the server is 0
  const auto next_sender = [&](int s) { return s % senders + 1; };
  for (int s = 1; s <= senders; ++s) {
    net.start(s, 0);
    net.start(0, s);
    net.start(s, next_sender(s));
  }
  net.settle();
  for (int instants = 0; instants < 600 && net.next_instant(); ++instants) {
    while (const std::optional<Scheduled> next = net.due_now()) {
      const auto [src, dst] = net.ends.at(next->flow);
      const bool ring = src != 0 && dst != 0;
      if (ring && rng() % 10 == 0) {
        net.hand_over(next->flow);
        net.check();
        continue;
      }
      net.finish(next->flow);
      // A ring's next message leaves a latency later; a push or pull's
      // next at once.
      if (ring) {
        net.start_after(1e-6 * (1 + rng() % 2), src, dst);
      } else {
        net.start(src, dst);
      }
    }
    net.start_delayed();
    if (rng() % 25 == 0) {
      net.start(static_cast<int>(rng() % endpoints), static_cast<int>(rng() % endpoints));
    }
    net.check();
    net.settle();
  }
}

TEST(SimEngine, SettlingRingFlowsBesideSlowPushesDirectlySchedulesWhatFillingWould) {
  const LinkSpec nic{25e9, 1e-6};
  for (unsigned seed = 1; seed <= 10; ++seed) {
    expect_direct_ring_settling_matches_filling(Topology::grouped(12, 1, 0, {}, nic), seed);
    // Nodes of two sharing a NIC: two ring flows on one port.
    expect_direct_ring_settling_matches_filling(
        Topology::grouped(12, 2, 0, {100e9, 1e-6}, nic, /*nic_per_node=*/true), seed);
  }
}

// A server on every worker: each worker's push to each server shares its
// NIC with n - 2 others and the server's NIC likewise, all at one max-min
// level. The filling must give them that level exactly (PortLedger,
// level_or_above): shares taken off flow by flow came out a rounding
// apart, and at 1,024 ranks the pushes' completions spread over 571
// instants, each a refill of a million flows.
TEST(SimEngine, FlowsAtOneMaxMinLevelEndAtOneInstant) {
  for (int n : {24, 100, 300}) {
    for (const LinkSpec& nic : {LinkSpec{25e9, 1e-6}, LinkSpec{12.5e9 / 3, 1e-6}}) {
      std::vector<double> ends;
      sim::Network net(Topology::grouped(n, 1, 0, {}, nic),
                       [&](double t, int, std::uint64_t) { ends.push_back(t); });
      for (int src = 0; src < n; ++src) {
        for (int dst = 0; dst < n; ++dst) {
          if (src != dst) net.start(src, dst, std::size_t{1} << 20, 0);
        }
      }
      net.settle(0);
      ASSERT_EQ(ends.size(), static_cast<std::size_t>(n * (n - 1)));
      const auto [first, last] = std::minmax_element(ends.begin(), ends.end());
      EXPECT_EQ(*first, *last) << n << " endpoints at " << nic.bytes_per_second
                               << " B/s: completions spread over " << (*last - *first) << " s";
    }
  }
}

// A server on every worker on twin networks, one settling directly what
// it can: every endpoint sends to every other, each finished flow followed
// at once by its pair's next (an instant of replacements) or a latency
// later (instants of endings only, then of starts only), sometimes handed
// over, sometimes not followed at all: dense components whose flows share
// their levels exactly.
TEST(SimEngine, SettlingAServerOnEveryWorkerDirectlySchedulesWhatFillingWould) {
  const LinkSpec nic{25e9, 1e-6};
  for (unsigned seed = 1; seed <= 10; ++seed) {
    const int endpoints = 10;
    TwinNetworks net(Topology::grouped(endpoints, 1, 0, {}, nic), seed, std::size_t{64} << 10);
    net.time_tolerance = 1e-13;
    std::mt19937& rng = net.rng;
    for (int src = 0; src < endpoints; ++src) {
      for (int dst = 0; dst < endpoints; ++dst) net.start(src, dst);
    }
    net.settle();
    for (int instants = 0; instants < 400 && net.next_instant(); ++instants) {
      while (const std::optional<Scheduled> next = net.due_now()) {
        const auto [src, dst] = net.ends.at(next->flow);
        const unsigned roll = rng() % 10;
        if (roll == 0) {
          net.hand_over(next->flow);
          net.check();
          continue;
        }
        net.finish(next->flow);
        if (roll < 6) net.start(src, dst);
        if (roll >= 6 && roll < 9) net.start_after(1e-6, src, dst);
      }
      net.start_delayed();
      net.check();
      net.settle();
    }
  }
}

}  // namespace
}  // namespace gradex
