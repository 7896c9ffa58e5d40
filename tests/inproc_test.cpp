// What only the in-process transport has: nested sub-groups, its waits'
// polling, shaping delays and its record of the failed rank. The contract
// every transport keeps is tested in transport_conformance_test.cpp.
#include <gtest/gtest.h>

#include <time.h>

#include <atomic>
#include <chrono>
#include <numeric>
#include <thread>
#include <vector>

#include "common/errors.h"
#include "transport/inproc/world.h"

namespace gradex {
namespace {

using namespace std::chrono_literals;

// Sub-groups of sub-groups: group 1 of outer group 0 and group 0 of outer
// group 1 must not share tags (adding the two levels' offsets would give
// both the same one, and the first message sent would match the first
// receive posted).
TEST(Inproc, NestedSubGroupsIsolateTags) {
  InprocWorld world(2);
  run_ranks(world, [](Comm& c) {
    SubComm outer0(c, {0, 1}, 0), outer1(c, {0, 1}, 1);
    SubComm inner01(outer0, {0, 1}, 1), inner10(outer1, {0, 1}, 0);
    const int peer = 1 - c.rank();
    if (c.rank() == 0) {
      int a = -1, b = -1;
      Request ra = inner01.irecv(peer, &a, sizeof a, 0);
      Request rb = inner10.irecv(peer, &b, sizeof b, 0);
      inner01.wait(ra);
      inner10.wait(rb);
      EXPECT_EQ(a, 1);
      EXPECT_EQ(b, 10);
    } else {
      const int one = 1, ten = 10;
      inner10.send(peer, &ten, sizeof ten, 0);
      inner01.send(peer, &one, sizeof one, 0);
    }
    // A third level has no field of its own.
    EXPECT_THROW(SubComm(inner01, {0, 1}, 0), std::exception);
  });
}

TEST(Inproc, WaitTimesOutInsteadOfHanging) {
  TransportOptions opts;
  opts.timeout = 200ms;
  InprocWorld world(2, opts);
  const auto start = std::chrono::steady_clock::now();
  try {
    run_ranks(world, [](Comm& c) {
      if (c.rank() == 0) {
        int x;
        c.recv(1, &x, sizeof x, 0);  // rank 1 never sends
      }
    });
    FAIL() << "expected a timeout";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("from rank 1"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

// A wait polls for TransportOptions::spin and then sleeps: messages arrive
// intact whether they land within the poll or after it.
class InprocSpin : public ::testing::TestWithParam<int> {};

TEST_P(InprocSpin, MessagesArriveIntactBeforeAndAfterThePoll) {
  TransportOptions opts;
  opts.spin = std::chrono::microseconds(GetParam());
  InprocWorld world(2, opts);
  run_ranks(world, [](Comm& c) {
    const int other = 1 - c.rank();
    for (int round = 0; round < 50; ++round) {
      // Every tenth round the sender is late, past any short poll.
      if (c.rank() == round % 2 && round % 10 == 0) std::this_thread::sleep_for(2ms);
      int value = round * 7 + c.rank(), got = -1;
      Request r = c.irecv(other, &got, sizeof got, 0);
      c.send(other, &value, sizeof value, 0);
      c.wait(r);
      ASSERT_EQ(got, round * 7 + other) << "round " << round;
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Waits, InprocSpin, ::testing::Values(0, 100, 50'000),
                         [](const auto& info) { return "spin_us_" + std::to_string(info.param); });

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

TEST(Inproc, AWaitSleepsOnceItsPollIsOver) {
  // Rank 0 waits 400 ms for a late message with a 1 ms poll: it must spend
  // that time asleep, not on the CPU that the other ranks need.
  TransportOptions opts;
  opts.spin = 1ms;
  InprocWorld world(2, opts);
  double cpu = -1;
  run_ranks(world, [&](Comm& c) {
    int x = 0;
    if (c.rank() == 1) {
      std::this_thread::sleep_for(400ms);
      c.send(0, &x, sizeof x, 0);
      return;
    }
    const double before = thread_cpu_seconds();
    c.recv(1, &x, sizeof x, 0);
    cpu = thread_cpu_seconds() - before;
  });
  EXPECT_GE(cpu, 0.0);
  EXPECT_LT(cpu, 0.04) << "a waiting rank used " << cpu << " s of CPU in 0.4 s";
}

TEST(Inproc, AWaitThatPollsLongerThanTheTimeoutStillTimesOut) {
  TransportOptions opts;
  opts.timeout = 300ms;
  opts.spin = 10s;
  InprocWorld world(2, opts);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(run_ranks(world,
                         [](Comm& c) {
                           int x = 0;
                           if (c.rank() == 0) c.recv(1, &x, sizeof x, 5);
                           else std::this_thread::sleep_for(600ms);
                         }),
               TimeoutError);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST(Inproc, AFailingRankReleasesItsPeersAtOnce) {
  TransportOptions opts;
  opts.timeout = 60s;  // the peers must not need it
  InprocWorld world(4, opts);
  const auto start = std::chrono::steady_clock::now();
  try {
    run_ranks(world, [](Comm& c) {
      if (c.rank() == 2) throw Error("rank 2 ran out of memory");
      std::vector<char> buf(16);
      c.recv((c.rank() + 3) % 4, buf.data(), buf.size(), 0);
    });
    FAIL() << "expected the root cause to propagate";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "rank 2 ran out of memory");
  }
  EXPECT_EQ(world.failed_rank(), 2);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

TEST(Inproc, ShapedMessagesTakeAtLeastTheirLinkTime) {
  // 2 MB at 100 MB/s plus 5 ms latency: at least 25 ms (a lower bound: the
  // shaper must never deliver early; how late depends on the scheduler).
  TransportOptions opts;
  opts.shaping = Topology::grouped(2, 1, 0, {}, {100e6, 0.005});
  InprocWorld world(2, opts);
  double elapsed = 0;
  std::atomic<double> posted{0};
  run_ranks(world, [&](Comm& c) {
    std::vector<char> buf(2'000'000);
    if (c.rank() == 0) {
      posted = c.clock().now();  // the shaper starts the clock at the post
      c.send(1, buf.data(), buf.size(), 0);
    } else {
      c.recv(0, buf.data(), buf.size(), 0);
      elapsed = c.clock().now() - posted.load();
    }
  });
  EXPECT_GE(elapsed, 0.025 * 0.99);
}

}  // namespace
}  // namespace gradex
