// What only the simulator has: timings that match the NIC model in closed
// form where there is no contention, fair sharing, determinism, deadlock
// detection and scale (transport/sim/world.h). The contract every transport
// keeps, and every scheme over it with real buffers, are tested in
// transport_conformance_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>

#include "common/errors.h"
#include "config/scenario.h"
#include "runner/execute.h"
#include "runner/plan.h"
#include "runner/report.h"
#include "runner/simulate.h"
#include "schemes/registry.h"
#include "scheme_options.h"
#include "transport/matching.h"
#include "transport/sim/event_queue.h"
#include "transport/sim/world.h"

namespace gradex::sim {
namespace {

constexpr double kGB = 1e9;

Topology flat(int endpoints, double bytes_per_second, double latency) {
  return Topology::grouped(endpoints, 1, 0, {}, {bytes_per_second, latency});
}

// ---- timings in closed form ---------------------------------------------------

TEST(SimTiming, RingWithoutContentionIsTheAlphaBetaFormula) {
  const int n = 8;
  const double b = 25 * kGB, a = 10e-6;
  SchemeOptions o;
  o.workers = n;
  o.segment_bytes = std::size_t{1} << 30;  // one message per step
  auto ring = make_scheme("ring", o);
  SimRequest req;
  req.count = n * 1000;
  req.topology = flat(n, b, a);
  const double bytes = static_cast<double>(req.count * 4);
  const double want = 2 * (n - 1) * a + 2.0 * (n - 1) / n * bytes / b;
  EXPECT_NEAR(simulate_allreduce(*ring, req).seconds, want, want * 1e-12);
}

TEST(SimTiming, ParameterServerSharesTheServerNicFairly) {
  // The PS example of claims A1-A3: 4 workers push 1 GB each into one 25 GB/s NIC.
  const int n = 4;
  const double b = 25 * kGB, a = 5e-6;
  SchemeOptions o;
  o.workers = n;
  o.servers = 1;
  auto ps = make_scheme("ps", o);
  SimRequest req;
  req.count = 250'000'000;  // 1 GB of f32, phantom
  req.topology = flat(ps->endpoints(), b, a);
  const double want = 2 * (a + n * 1e9 / b);  // 0.32 s
  EXPECT_NEAR(simulate_allreduce(*ps, req).seconds, want, want * 1e-12);
}

TEST(SimTiming, IsDeterministic) {
  auto scheme = make_scheme("tree", gradex::testing::options_for(7));
  SimRequest req;
  req.count = 100'003;
  req.topology = Topology::grouped(7, 1, 0, {}, {3 * kGB, 2e-6});
  const SimResult a = simulate_allreduce(*scheme, req);
  const SimResult b = simulate_allreduce(*scheme, req);
  EXPECT_EQ(a.seconds, b.seconds);
  EXPECT_EQ(a.stats.events, b.stats.events);
}

// Three senders into one receiver and one unrelated pair: the shared
// ingress splits three ways, the lone flow runs at full rate.
TEST(SimNetwork, MaxMinFairSharing) {
  const double b = 1 * kGB;
  SimWorld world(5, TransportOptions{.shaping = flat(5, b, 0)});
  std::vector<double> done(5, 0);
  world.run([&](Comm& c) {
    const int r = c.rank();
    const std::size_t bytes = 1'000'000;
    if (r == 0) {
      Request from4 = c.irecv(4, nullptr, bytes, 1);
      c.send(3, nullptr, bytes, 0);
      c.wait(from4);
    } else if (r < 3) {
      c.send(3, nullptr, bytes, 0);
    } else if (r == 3) {
      std::vector<Request> rq;
      for (int p = 0; p < 3; ++p) rq.push_back(c.irecv(p, nullptr, bytes, 0));
      c.wait_all(rq);
    } else {
      c.send(0, nullptr, bytes, 1);  // into rank 0's idle ingress
    }
    done[static_cast<std::size_t>(r)] = c.clock().now();
  });
  EXPECT_DOUBLE_EQ(done[3], 3e-3);
  EXPECT_DOUBLE_EQ(done[4], 1e-3);
}

// Two messages on one connection leave in order (the second waits for the
// first, as in the in-process shaper's FIFO ports), rather than sharing.
TEST(SimNetwork, OneConnectionIsFifo) {
  SimWorld world(2, TransportOptions{.shaping = flat(2, 1 * kGB, 0)});
  std::vector<double> done;
  world.run([&](Comm& c) {
    const std::size_t bytes = 1'000'000;
    if (c.rank() == 0) {
      Request a = c.isend(1, nullptr, bytes, 0);
      Request b = c.isend(1, nullptr, bytes, 1);
      c.wait(a);
      done.push_back(c.clock().now());
      c.wait(b);
      done.push_back(c.clock().now());
    } else {
      Request b = c.irecv(0, nullptr, bytes, 1);
      Request a = c.irecv(0, nullptr, bytes, 0);
      c.wait(b);
      c.wait(a);
    }
  });
  ASSERT_EQ(done.size(), 2u);
  EXPECT_DOUBLE_EQ(done[0], 1e-3);
  EXPECT_DOUBLE_EQ(done[1], 2e-3);
}

// A collective that keeps a connection per tag (Comm::connection_per_tag,
// a GPU library's channels) sends its two tags' messages side by side,
// sharing the ports, while each tag's own messages still leave in order;
// the setting belongs to the comm and is off again for the next messages.
TEST(SimNetwork, AConnectionPerTagSharesThePortsAcrossTags) {
  SimWorld world(2, TransportOptions{.shaping = flat(2, 1 * kGB, 0)});
  std::vector<double> done;
  world.run([&](Comm& c) {
    const std::size_t bytes = 1'000'000;
    const auto exchange = [&](bool per_tag) {
      c.set_connection_per_tag(per_tag);
      const double start = c.clock().now();
      if (c.rank() == 0) {
        std::vector<Request> sends = {c.isend(1, nullptr, bytes, 0), c.isend(1, nullptr, bytes, 1),
                                      c.isend(1, nullptr, bytes, 0)};
        for (Request& r : sends) {
          c.wait(r);
          done.push_back(c.clock().now() - start);
        }
      } else {
        std::vector<Request> recvs = {c.irecv(0, nullptr, bytes, 1), c.irecv(0, nullptr, bytes, 0),
                                      c.irecv(0, nullptr, bytes, 0)};
        c.wait_all(recvs);
      }
      c.set_connection_per_tag(false);
    };
    exchange(true);
    exchange(false);
  });
  ASSERT_EQ(done.size(), 6u);
  // Per tag: tag 0's first and tag 1's message at 0.5 GB/s each (2 ms),
  // then tag 0's second, queued behind its first, alone (3 ms).
  EXPECT_DOUBLE_EQ(done[0], 2e-3);
  EXPECT_DOUBLE_EQ(done[1], 2e-3);
  EXPECT_DOUBLE_EQ(done[2], 3e-3);
  // One connection: one after the other.
  EXPECT_DOUBLE_EQ(done[3], 1e-3);
  EXPECT_DOUBLE_EQ(done[4], 2e-3);
  EXPECT_DOUBLE_EQ(done[5], 3e-3);
}

// Scheme::run sets the comm's connection per tag for the run only: what
// the comm had before is there again after it, whichever the scheme
// declares. (That the run itself keeps a connection per tag shows in
// sim_engine_test's record of the in-network schemes, whose times change
// without it.)
TEST(SimNetwork, SchemeRunPutsBackTheCommsConnectionPerTag) {
  for (const std::string name : {"ring", "in_network_tree"}) {
    SchemeOptions o;
    o.workers = 2;
    o.ranks_per_node = 1;
    auto scheme = make_scheme(name, o);
    Topology topology = flat(scheme->endpoints(), 1 * kGB, 0);
    if (scheme->reduces_in_network()) {
      topology = Topology::grouped(2, 1, 2, {10 * kGB, 0}, {1 * kGB, 0});
      topology.add_switch(2, 2, {10 * kGB, 0}, /*in_node=*/true);
    }
    SimWorld world(scheme->endpoints(), TransportOptions{.shaping = topology});
    const bool declared = name == "in_network_tree";
    EXPECT_EQ(scheme->connection_per_tag(), declared);
    world.run([&](Comm& c) {
      // The opposite of what the scheme declares, so that a run that left
      // its own setting behind is caught.
      c.set_connection_per_tag(!declared);
      std::vector<float> data(64, 1.0f);
      scheme->run(c, Collective::all_reduce, Tensor{data.data(), data.size(), DType::f32},
                  ReduceOp::sum);
      EXPECT_EQ(c.connection_per_tag(), !declared) << name;
    });
  }
}

// The second message on a connection takes over the first's flow when it
// leaves, at the rate the port's sharing gives it: half of rank 2's
// ingress while rank 1's 2 MB still arrive, all of it once rank 1's
// message ends at the very instant the hand-over happens.
TEST(SimNetwork, AQueuedMessageTakesOverItsConnectionAtTheSharedRate) {
  for (const std::size_t other : {std::size_t{2'000'000}, std::size_t{1'000'000}}) {
    SimWorld world(3, TransportOptions{.shaping = flat(3, 1 * kGB, 0)});
    std::vector<double> done(3, 0);
    world.run([&](Comm& c) {
      const std::size_t bytes = 1'000'000;
      if (c.rank() == 0) {
        Request a = c.isend(2, nullptr, bytes, 0);
        Request b = c.isend(2, nullptr, bytes, 0);
        c.wait(a);
        c.wait(b);
      } else if (c.rank() == 1) {
        c.send(2, nullptr, other, 1);
      } else {
        std::vector<Request> rq = {c.irecv(0, nullptr, bytes, 0), c.irecv(0, nullptr, bytes, 0),
                                   c.irecv(1, nullptr, other, 1)};
        c.wait_all(rq);
      }
      done[static_cast<std::size_t>(c.rank())] = c.clock().now();
    });
    // Both at 0.5 GB/s for 2 ms; then rank 0's second message at 0.5 GB/s
    // beside rank 1's last MB (4 ms), or alone at 1 GB/s (3 ms).
    const double second = other == 2'000'000 ? 4e-3 : 3e-3;
    EXPECT_DOUBLE_EQ(done[0], second) << other;
    EXPECT_DOUBLE_EQ(done[1], other == 2'000'000 ? 4e-3 : 2e-3) << other;
    EXPECT_DOUBLE_EQ(done[2], second) << other;
  }
}

TEST(SimNetwork, SleepUntilAdvancesVirtualTime) {
  SimWorld world(2, TransportOptions{.shaping = flat(2, 0, 0)});
  world.run([](Comm& c) {
    c.clock().sleep_until(c.rank() + 1.5);
    EXPECT_EQ(c.clock().now(), c.rank() + 1.5);
  });
  EXPECT_EQ(world.now(), 2.5);
}

// A wait for any of several operations returns the first of them, in the
// order given, that has ended, also where several ended while the rank was
// blocked and the later one ended first (the simulator then knows which
// ended without reading the others only where one did).
TEST(SimWaits, WaitAnyReturnsTheFirstOfThoseThatEndedWhileItWasBlocked) {
  SimWorld world(2, TransportOptions{.shaping = flat(2, 0, 0)});
  world.run([](Comm& c) {
    int x = 1, y = 2;
    if (c.rank() == 0) {
      // Rank 1 takes both, the second first, before rank 0 runs again.
      std::vector<Request> both;
      both.push_back(c.isend(1, &x, sizeof x, 1));
      both.push_back(c.isend(1, &y, sizeof y, 2));
      EXPECT_EQ(c.wait_any(both), 0u);
      EXPECT_EQ(c.wait_any(both), 1u);
      // Rank 1 takes the second alone, then the first once told to.
      std::vector<Request> one_by_one;
      one_by_one.push_back(c.isend(1, &x, sizeof x, 3));
      one_by_one.push_back(c.isend(1, &y, sizeof y, 4));
      EXPECT_EQ(c.wait_any(one_by_one), 1u);
      c.send(1, nullptr, 0, 5);
      EXPECT_EQ(c.wait_any(one_by_one), 0u);
    } else {
      Request second = c.irecv(0, &y, sizeof y, 2);
      Request first = c.irecv(0, &x, sizeof x, 1);
      c.wait(second);
      c.wait(first);
      c.recv(0, &y, sizeof y, 4);
      c.recv(0, nullptr, 0, 5);
      c.recv(0, &x, sizeof x, 3);
    }
  });
}

// The event queue pops by time, then by posting order, exactly as an
// ordered set would: many events at one instant (a step of every rank),
// times that differ in their last bits, and pushes while an instant is
// being popped. An event before the current time is a bug, refused.
struct QueuedEvent {
  double time;
  std::uint64_t seq;
};
using E = QueuedEvent;
// What the queue must pop, in order: (time, seq).
using Reference = std::set<std::pair<double, std::uint64_t>>;

// Pops one event, which must be the reference's first (then dropped from
// it); `now` becomes its time.
::testing::AssertionResult pops_next(EventQueue<E>& queue, Reference& reference, double& now) {
  const E e = queue.pop();
  const auto expected = *reference.begin();
  reference.erase(reference.begin());
  now = e.time;
  if (std::make_pair(e.time, e.seq) == expected) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "popped (" << e.time << ", " << e.seq << "), expected ("
                                       << expected.first << ", " << expected.second << ")";
}

TEST(SimEventQueue, PopsInTimeThenPostingOrder) {
  EventQueue<E> queue;
  Reference reference;
  std::mt19937_64 rng(7);
  double now = 0;
  std::uint64_t seq = 0;
  for (int step = 0; step < 50'000; ++step) {
    if (reference.empty() || rng() % 3 != 0) {
      const std::uint64_t kind = rng() % 4;
      const double t = kind == 0   ? now                                   // this instant
                       : kind == 1 ? std::nextafter(now + 1e-6, 1.0)       // the last bits
                       : kind == 2 ? now + 1e-6                            // shared by many
                                   : now + static_cast<double>(rng() % 1000) * 1e-7;
      queue.push({t, seq});
      reference.insert({t, seq++});
    } else {
      ASSERT_TRUE(pops_next(queue, reference, now)) << "step " << step;
    }
  }
  while (!reference.empty()) ASSERT_TRUE(pops_next(queue, reference, now));
  EXPECT_TRUE(queue.empty());
  queue.push({now + 1, seq++});
  queue.pop();
  EXPECT_THROW(queue.push({now, seq++}), InvariantError);
}

// Dropping events (the simulator drops flows' stale completions) leaves
// the others popping as they would have: by time, then posting order,
// also for events at the instant being popped.
TEST(SimEventQueue, DroppedEventsLeaveTheRestInOrder) {
  EventQueue<E> queue;
  Reference reference;
  std::mt19937_64 rng(11);
  double now = 0;
  std::uint64_t seq = 0;
  for (int step = 0; step < 20'000; ++step) {
    if (step % 997 == 0) {
      const auto odd = [](std::uint64_t s) { return s % 3 == 1; };
      const std::size_t removed = queue.remove_if([&](const E& e) { return odd(e.seq); });
      EXPECT_EQ(removed, std::erase_if(reference, [&](const auto& r) { return odd(r.second); }));
    }
    if (reference.empty() || rng() % 3 != 0) {
      const double t = rng() % 2 == 0 ? now : now + static_cast<double>(rng() % 100) * 1e-7;
      queue.push({t, seq});
      reference.insert({t, seq++});
    } else {
      ASSERT_TRUE(pops_next(queue, reference, now)) << "step " << step;
    }
  }
  EXPECT_EQ(queue.remove_if([](const E&) { return true; }), reference.size());
  EXPECT_TRUE(queue.empty());
}

// ---- failures ---------------------------------------------------------------

// The matcher the simulator's ranks use remembers the queue it last found
// on each side and keeps a queue's lone entry in the queue itself: random
// receives and arrivals over a few (peer, tag) pairs must pair up exactly
// as first-in-first-out queues per pair would, with and without kept
// queues.
template <bool Keep>
void matches_like_queues_per_pair(std::uint64_t seed) {
  transport::Matcher<int, int, Keep> matcher;
  using Queues = std::map<std::pair<int, Tag>, std::deque<int>>;
  Queues receives, arrivals;
  // What posting `id` on one side should give: the other side's oldest
  // entry for the pair, else nothing (and `id` waits on its side).
  auto expect = [](Queues& mine, Queues& theirs, std::pair<int, Tag> key, int id) {
    std::optional<int> taken;
    if (auto& q = theirs[key]; !q.empty()) {
      taken = q.front();
      q.pop_front();
    } else {
      mine[key].push_back(id);
    }
    return taken;
  };
  std::mt19937_64 rng(seed);
  for (int step = 0; step < 20'000; ++step) {
    const int peer = static_cast<int>(rng() % 3);
    const Tag tag = rng() % 2;
    if (rng() % 2 == 0) {
      const std::optional<int> expected = expect(receives, arrivals, {peer, tag}, step);
      ASSERT_EQ(matcher.post_receive(peer, tag, step), expected) << "step " << step;
    } else {
      const std::optional<int> expected = expect(arrivals, receives, {peer, tag}, step);
      ASSERT_EQ(matcher.post_arrival(peer, tag, step), expected) << "step " << step;
    }
  }
  std::size_t posted = 0, waiting = 0;
  for (const auto& [key, q] : receives) posted += q.size();
  for (const auto& [key, q] : arrivals) waiting += q.size();
  EXPECT_EQ(matcher.receives(), posted);
  EXPECT_EQ(matcher.arrivals(), waiting);
}

TEST(SimMatcher, PairsUpAsQueuesPerPeerAndTag) {
  matches_like_queues_per_pair<true>(3);
  matches_like_queues_per_pair<false>(5);
}

TEST(SimFailures, DeadlockNamesTheStuckRanks) {
  SimWorld world(3, TransportOptions{.shaping = flat(3, kGB, 0)});
  try {
    world.run([](Comm& c) {
      if (c.rank() == 2) return;
      // Both wait for a message the other never sends.
      c.recv(1 - c.rank(), nullptr, 8, 7);
    });
    FAIL() << "expected a deadlock";
  } catch (const TimeoutError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("deadlock"), std::string::npos) << what;
    EXPECT_NE(what.find("rank 0 is waiting to receive from rank 1 (tag 7, 8 bytes)"), std::string::npos)
        << what;
    EXPECT_NE(what.find("rank 1 is waiting to receive from rank 0"), std::string::npos) << what;
  }
}

// ---- scale ------------------------------------------------------------------

TEST(SimScale, PhantomGigabyteOn256Ranks) {
  const int n = 256;
  SchemeOptions o;
  o.workers = n;
  // One message per step: with several, fair sharing of the segments
  // leaves room for pipelining the formula does not count.
  o.segment_bytes = std::size_t{1} << 30;
  auto ring = make_scheme("ring", o);
  SimRequest req;
  req.count = std::size_t{1} << 28;  // 1 GiB of f32, no memory
  req.topology = flat(n, 50 * kGB, 1e-6);
  const SimResult r = simulate_allreduce(*ring, req);
  const double bytes = static_cast<double>(req.count) * 4;
  const double want = 2 * (n - 1) * 1e-6 + 2.0 * (n - 1) / n * bytes / (50 * kGB);
  EXPECT_NEAR(r.seconds, want, want * 1e-9);
  EXPECT_EQ(r.traffic[0].bytes_sent, static_cast<std::uint64_t>(2.0 * (n - 1) / n * bytes));
}

// A pipelined PS's workers and its server post a window of chunks at a
// time (ps/push_pull_round.h): what a round holds open does not grow with
// the number of chunks. Posted all at once, 512 chunks would hold 8 x 512
// pulls open.
TEST(SimScale, PipelinedPsHoldsAsManyRequestsForAnyNumberOfChunks) {
  SchemeOptions o;
  o.workers = 8;
  o.servers = 1;
  o.segment_bytes = std::size_t{1} << 18;  // a window is 16 of them (kRoundBytes: 4 MiB)
  auto ps = make_scheme("ps_pipelined", o);
  const auto peak = [&](std::size_t chunks) {
    SimRequest req;
    req.count = chunks * 65536;  // f32: 256 KiB chunks
    req.topology = flat(ps->endpoints(), 10 * kGB, 1e-6);
    return simulate_allreduce(*ps, req).stats.peak_operations;
  };
  const std::uint64_t few = peak(32);
  const std::uint64_t many = peak(512);
  EXPECT_GT(few, 8u);
  EXPECT_EQ(many, few);
}

// A PS with a server on every worker posts its pushes, pulls, takes and
// replies a window at a time (ps/push_pull_round.h): what a rank holds
// open does not grow with the number of ranks, in any collective, where
// a window is 16 messages (shards of 256 KiB: 16 of them hold the 4 MiB
// of kRoundBytes). Posted all at once, each rank held n pushes and n
// pulls, and its server n replies: per rank 3.8-4.1x more at 128 ranks
// than at 32 (95 and 383 operations in an all-reduce; windowed, 33 and 33).
// (A broadcast's servers answer all their workers at once:
// ps/push_pull_round.cpp says why.)
TEST(SimScale, ColocatedPsHoldsPerRankAsManyRequestsForAnyWorldSize) {
  for (Collective c :
       {Collective::all_reduce, Collective::reduce_scatter, Collective::all_gather}) {
    const auto per_rank = [c](int n) {
      SchemeOptions o;
      o.workers = n;
      o.servers = n;
      auto ps = make_scheme("ps_colocated", o);
      SimRequest req;
      req.collective = c;
      req.count = static_cast<std::size_t>(n) * 65536;  // f32: shards of 256 KiB
      req.topology = flat(n, 10 * kGB, 1e-6);
      const SimResult r = simulate_allreduce(*ps, req);
      EXPECT_GT(r.seconds, 0) << collective_name(c);
      return static_cast<double>(r.stats.peak_operations) / n;
    };
    const double few = per_rank(32), many = per_rank(128);
    EXPECT_GT(few, 2) << collective_name(c);
    EXPECT_LE(many, 1.1 * few) << collective_name(c);
  }
}

// Servers of their own, as many as the workers (in_network's switch
// ports, or ps.servers = n): workers and servers post a window at a time
// too, in whole shards and in chunks, so what a rank holds open does not
// grow with the number of ranks. Before, a pipelined worker kept a chunk
// to every server in flight and a server answered all n workers of four
// chunks at once: per rank 3.9x more at 128 ranks than at 32. (A
// broadcast's servers still answer all their workers at once:
// parameter_server.cpp says why.)
TEST(SimScale, DedicatedPsHoldsPerRankAsManyRequestsForAnyWorldSize) {
  for (const char* scheme : {"ps", "ps_pipelined"}) {
    for (Collective c :
         {Collective::all_reduce, Collective::reduce_scatter, Collective::all_gather}) {
      const auto per_rank = [&](int n) {
        SchemeOptions o;
        o.workers = n;
        o.servers = n;
        o.segment_bytes = std::size_t{1} << 18;  // two chunks a shard
        auto ps = make_scheme(scheme, o);
        SimRequest req;
        req.collective = c;
        req.count = static_cast<std::size_t>(n) * (std::size_t{1} << 17);  // f32: 512 KiB shards
        req.topology = flat(ps->endpoints(), 10 * kGB, 1e-6);
        const SimResult r = simulate_allreduce(*ps, req);
        EXPECT_GT(r.seconds, 0) << scheme << ", " << collective_name(c);
        return static_cast<double>(r.stats.peak_operations) / ps->endpoints();
      };
      const double few = per_rank(32), many = per_rank(128);
      EXPECT_GT(few, 2) << scheme << ", " << collective_name(c);
      EXPECT_LE(many, 1.1 * few) << scheme << ", " << collective_name(c);
    }
  }
}

// The double tree keeps a window of segments open per stream
// (allreduce/tree.cpp): what it holds open does not grow with the number
// of segments (within a few operations: when a window's oldest completes
// depends on timing), and a longer buffer takes proportionally longer.
// Posted all at once, 1,024 segments per half would hold thousands open.
TEST(SimScale, TreeHoldsAsManyRequestsForAnyNumberOfSegments) {
  SchemeOptions o;
  o.workers = 8;
  o.segment_bytes = 1024;
  auto tree = make_scheme("tree", o);
  const auto run = [&](std::size_t segments_per_half) {
    SimRequest req;
    req.count = 2 * segments_per_half * 256;  // f32: 1 KiB segments
    req.topology = flat(8, 10 * kGB, 1e-6);
    return simulate_allreduce(*tree, req);
  };
  const SimResult few = run(64);
  const SimResult many = run(1024);
  EXPECT_GT(few.stats.peak_operations, 8u);
  EXPECT_LE(many.stats.peak_operations, few.stats.peak_operations + few.stats.peak_operations / 16);
  EXPECT_GT(many.seconds, 10 * few.seconds);
}

// The double tree's reduce-scatter and all-gather keep a window of units
// open per stream and per neighbour (allreduce/tree_blocks.cpp): what a
// rank holds open grows with its streams, one per level of its depth in
// an all-gather (log n), not with the number of ranks. Posted at once, a
// reduce-scatter's leaf sent every other rank's block at the start and an
// all-gather's leaf posted a receive for each: per rank 6.7x (reduce-
// scatter) and 5.9x more at 512 ranks than at 64. Windowed: 1.2x and 1.8x.
TEST(SimScale, TreeBlockCollectivesHoldPerRankAsManyRequestsForAnyWorldSize) {
  for (Collective c : {Collective::reduce_scatter, Collective::all_gather}) {
    const auto per_rank = [c](int n) {
      SchemeOptions o;
      o.workers = n;
      o.segment_bytes = std::size_t{1} << 20;
      auto tree = make_scheme("tree", o);
      SimRequest req;
      req.collective = c;
      // 1 MiB halves of f32, one segment each: a lane's window is 8 of
      // them (its bytes' bound, 4 MiB, holds 4).
      req.count = static_cast<std::size_t>(n) * (std::size_t{1} << 19);
      req.topology = flat(n, 10 * kGB, 1e-6);
      const SimResult r = simulate_allreduce(*tree, req);
      EXPECT_GT(r.seconds, 0) << collective_name(c);
      return static_cast<double>(r.stats.peak_operations) / n;
    };
    const double few = per_rank(64);
    const double many = per_rank(512);
    EXPECT_GT(few, 8) << collective_name(c);
    EXPECT_LE(many, 2 * few) << collective_name(c) << ": " << few << " per rank at 64 ranks";
  }
}

// The simulator's ranks keep their emptied (peer, tag) queues for the next
// message, but no more than a bound of them: a scheme with a tag per block
// would otherwise keep O(n) queues on every rank.
TEST(SimMatcher, KeepsABoundedNumberOfEmptiedQueues) {
  transport::Matcher<int, int, /*KeepEmptyQueues=*/true> matcher;
  for (int tag = 0; tag < 10000; ++tag) {
    EXPECT_FALSE(matcher.post_receive(1, static_cast<Tag>(tag), tag).has_value());
    const auto taken = matcher.post_arrival(1, static_cast<Tag>(tag), -tag);
    ASSERT_TRUE(taken.has_value());
    EXPECT_EQ(*taken, tag);
  }
  EXPECT_EQ(matcher.receives(), 0u);
  EXPECT_EQ(matcher.arrivals(), 0u);
  EXPECT_LE(matcher.kept_queues(), 2 * 64u);
}

// ---- symmetric subsets -------------------------------------------------------

// Each row of `scenario` simulated on every rank, and the same rows with
// `subset` ranks standing for all of them.
std::pair<std::vector<ResultRow>, std::vector<ResultRow>> whole_and_subset(nlohmann::json scenario,
                                                                           int subset) {
  scenario["name"] = "subset";
  scenario["transport"] = "sim";
  const auto run = [](const nlohmann::json& doc) {
    return execute_plan(plan_runs(parse_scenario(doc)), [](const PlannedRun&, const ResultRow&) {});
  };
  std::vector<ResultRow> whole = run(scenario);
  scenario["symmetric_subset"] = subset;
  return {std::move(whole), run(scenario)};
}

// On networks that repeat themselves, the ring's ranks are shifted copies
// of each other, so a few of them, their peers wrapped round, give every
// rank's time and traffic: flat InfiniBand with its protocols, nodes of 8
// GPUs with a NIC each, nodes sharing a NIC under a 4:1 leaf/spine tier,
// and a sliced all-reduce; each collective the ring runs symmetrically.
TEST(SymmetricSubset, StandsForEveryRankExactly) {
  struct Case {
    const char* network;
    int subset;
  };
  const Case cases[] = {
      {R"({"workers": 48, "network": {"inter_node": "ib_hdr_200g"}})", 6},
      {R"({"workers": 32, "network": {"node": "dgx_a100"}})", 16},
      {R"({"workers": 64, "ranks_per_node": 2, "network": {"inter_node": "ib_hdr_200g",
           "intra_node": "a100_nvlink", "nic_per_node": true,
           "spine": {"nodes_per_leaf": 4, "oversubscription": 4}}})", 16},
      {R"({"workers": 32, "slice_bytes": "256KiB", "network": {"inter_node": "ib_ndr_400g"}})", 4},
  };
  for (const Case& c : cases) {
    for (const char* collective : {"all_reduce", "reduce_scatter", "all_gather"}) {
      nlohmann::json doc = nlohmann::json::parse(c.network);
      if (doc.contains("slice_bytes") && std::string(collective) != "all_reduce") continue;
      doc["schemes"] = {"ring"};
      doc["collective"] = collective;
      doc["segment_bytes"] = "64KiB";
      doc["sizes"] = {"3MiB", "24MiB"};  // blocks of one or several segments
      const auto [whole, subset] = whole_and_subset(doc, c.subset);
      ASSERT_EQ(whole.size(), subset.size());
      for (std::size_t i = 0; i < whole.size(); ++i) {
        SCOPED_TRACE(std::string(c.network) + " " + collective + " " + std::to_string(whole[i].bytes));
        EXPECT_EQ(whole[i].source, "simulated");
        EXPECT_EQ(subset[i].source, "simulated-subset");
        EXPECT_EQ(subset[i].subset, c.subset);
        EXPECT_NEAR(subset[i].time, whole[i].time, whole[i].time * 1e-12);
        EXPECT_GT(subset[i].time, 0);
        EXPECT_EQ(subset[i].link_bytes, whole[i].link_bytes);
        EXPECT_EQ(subset[i].traffic, whole[i].traffic);
        EXPECT_TRUE(subset[i].traffic_matches);
        EXPECT_EQ(subset[i].model_time, whole[i].model_time);
        EXPECT_NE(row_notes(subset[i]).find("symmetric subset: " + std::to_string(c.subset) +
                                            " of " + std::to_string(whole[i].workers)),
                  std::string::npos);
      }
    }
  }
}

// Wherever a subset would not be exact, or does not apply, the plan
// refuses it by name before anything runs.
TEST(SymmetricSubset, IsRefusedWhereItWouldNotBeExact) {
  const nlohmann::json base = nlohmann::json::parse(R"({"name": "x", "workers": [16],
      "schemes": ["ring"], "sizes": ["64KiB"], "transport": "sim", "symmetric_subset": 4,
      "network": {"inter_node": "ib_hdr_200g"}})");
  struct Case {
    nlohmann::json patch;
    const char* says;
  };
  const Case cases[] = {
      {{{"transport", "inproc"}}, "applies to the simulator only"},
      {{{"schemes", {"ring", "tree"}}}, "'tree' does not run one schedule on every rank"},
      {{{"schemes", "all"}}, "does not run one schedule on every rank"},
      {{{"collective", "broadcast"}}, "'ring' does not run one schedule"},
      {{{"workers", {16, 18}}}, "4 ranks do not divide 18 workers"},
      {{{"ranks_per_node", 8}}, "not a whole number of the network's repeating unit (8 ranks"},
      {{{"sizes", {1000}}}, "1000 B (250 elements) does not split evenly over 16 workers"},
      {{{"straggler_ms", 1}}, "a straggler"},
      {{{"symmetric_subset", 1}}, "must be between 2"},
  };
  for (const Case& c : cases) {
    nlohmann::json doc = base;
    doc.merge_patch(c.patch);
    SCOPED_TRACE(doc.dump());
    try {
      plan_runs(parse_scenario(doc));
      ADD_FAILURE() << "expected a ConfigError";
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.field(), "/symmetric_subset");
      EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
    }
  }
  try {
    plan_runs(parse_scenario(nlohmann::json::parse(R"({"name": "t", "workers": 4,
        "transport": "sim", "symmetric_subset": 2, "workload": {"kind": "train",
        "model": "resnet50", "max_steps": 1}})")));
    ADD_FAILURE() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "/symmetric_subset");
    EXPECT_NE(std::string(e.what()).find("not to a train workload"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gradex::sim
