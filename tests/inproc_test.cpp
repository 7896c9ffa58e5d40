// The in-process transport: matching order, self messages, sub-groups,
// shaping delays, and failures that end in errors instead of hangs.
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

TEST(Inproc, MessagesWithTheSameTagArriveInOrder) {
  InprocWorld world(2);
  run_ranks(world, [](Comm& c) {
    std::vector<int> v(3);
    if (c.rank() == 0) {
      std::vector<Request> rs;
      for (int i = 0; i < 3; ++i) {
        v[i] = i * 10;
        rs.push_back(c.isend(1, &v[i], sizeof(int), 7));
      }
      c.wait_all(rs);
    } else {
      for (int i = 0; i < 3; ++i) c.recv(0, &v[i], sizeof(int), 7);
      EXPECT_EQ(v, (std::vector<int>{0, 10, 20}));
    }
  });
}

TEST(Inproc, TagsSeparateStreams) {
  InprocWorld world(2);
  run_ranks(world, [](Comm& c) {
    int a = 1, b = 2;
    if (c.rank() == 0) {
      c.send(1, &a, sizeof a, 1);  // receiver posts tag 2 first: must not match this
      c.send(1, &b, sizeof b, 2);
    } else {
      int x = 0, y = 0;
      Request ry = c.irecv(0, &y, sizeof y, 2);
      Request rx = c.irecv(0, &x, sizeof x, 1);
      c.wait(rx);
      c.wait(ry);
      EXPECT_EQ(x, 1);
      EXPECT_EQ(y, 2);
    }
  });
}

TEST(Inproc, ReceiveReduceCombinesIntoTheDestination) {
  InprocWorld world(3);
  run_ranks(world, [](Comm& c) {
    std::vector<float> v(5, static_cast<float>(c.rank() + 1));
    if (c.rank() == 0) {
      for (int peer : {1, 2}) {
        Request r = c.irecv_reduce(peer, Tensor{v.data(), v.size(), DType::f32}, ReduceOp::sum, 0);
        c.wait(r);
      }
      EXPECT_EQ(v, std::vector<float>(5, 6.0f));
    } else {
      c.send(0, v.data(), v.size() * sizeof(float), 0);
    }
  });
}

TEST(Inproc, SelfMessagesAreLocalAndUncounted) {
  InprocWorld world(1);
  run_ranks(world, [](Comm& c) {
    int a = 42, b = 0;
    Request s = c.isend(0, &a, sizeof a, 3);
    Request r = c.irecv(0, &b, sizeof b, 3);
    c.wait(r);
    c.wait(s);
    EXPECT_EQ(b, 42);
    EXPECT_EQ(c.traffic().bytes_sent, 0u);
  });
}

TEST(Inproc, SubGroupsTranslateRanksAndIsolateTags) {
  InprocWorld world(4);
  run_ranks(world, [](Comm& c) {
    // Two sub-groups {0,2} and {1,3}, both using tag 0 concurrently.
    const int space = c.rank() % 2;
    SubComm sub(c, {space, space + 2}, static_cast<std::uint32_t>(space));
    int mine = c.rank(), theirs = -1;
    const int peer = 1 - sub.rank();
    Request r = sub.irecv(peer, &theirs, sizeof theirs, 0);
    Request s = sub.isend(peer, &mine, sizeof mine, 0);
    sub.wait(r);
    sub.wait(s);
    EXPECT_EQ(theirs, sub.parent_rank(peer));
    sub.barrier();
  });
}

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

TEST(Inproc, BarrierHoldsEveryoneUntilAllArrive) {
  InprocWorld world(5);
  std::atomic<int> arrived{0};
  run_ranks(world, [&](Comm& c) {
    for (int round = 1; round <= 3; ++round) {
      arrived.fetch_add(1);
      c.barrier();
      EXPECT_GE(arrived.load(), round * 5);
      c.barrier();
    }
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

TEST(Inproc, PeersOfAFailedRankSeeWhoFailed) {
  InprocWorld world(2);
  std::string seen;
  try {
    run_ranks(world, [&](Comm& c) {
      if (c.rank() == 1) throw Error("boom");
      int x;
      try {
        c.recv(1, &x, sizeof x, 0);
      } catch (const PeerLostError& e) {
        EXPECT_EQ(e.peer(), 1);
        seen = e.what();
        throw;
      }
    });
  } catch (const Error&) {
  }
  EXPECT_NE(seen.find("peer rank 1 failed: boom"), std::string::npos) << seen;
}

TEST(Inproc, SizeMismatchIsAnError) {
  InprocWorld world(2);
  EXPECT_THROW(run_ranks(world,
                         [](Comm& c) {
                           std::vector<char> buf(8);
                           if (c.rank() == 0) {
                             c.send(1, buf.data(), 8, 0);
                           } else {
                             c.recv(0, buf.data(), 4, 0);
                           }
                         }),
               InvariantError);
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

TEST(Inproc, CountsTrafficPerEndpoint) {
  InprocWorld world(3);
  run_ranks(world, [](Comm& c) {
    std::vector<char> out(100), in(100);
    const int next = (c.rank() + 1) % 3, prev = (c.rank() + 2) % 3;
    std::vector<Request> all;
    all.push_back(c.irecv(prev, in.data(), 60, 0));
    all.push_back(c.isend(next, out.data() + 60, 40, 1));
    all.push_back(c.irecv(prev, in.data() + 60, 40, 1));
    all.push_back(c.isend(next, out.data(), 60, 0));
    c.wait_all(all);
    EXPECT_EQ(c.traffic().bytes_sent, 100u);
    EXPECT_EQ(c.traffic().bytes_received, 100u);
    EXPECT_EQ(c.traffic().messages_sent, 2u);
  });
}

}  // namespace
}  // namespace gradex
