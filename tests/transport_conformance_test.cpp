// The contract every transport keeps (common/comm.h), tested once over
// every name in kTransportNames through make_world: a new transport is
// tested by being registered there. Then every registered scheme on every
// transport at several sizes, against the closed-form reference and the
// traffic it declares.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "common/errors.h"
#include "runner/measure.h"
#include "schemes/registry.h"
#include "scheme_options.h"
#include "transport/world.h"

namespace gradex {
namespace {

using namespace std::chrono_literals;
using testing::options_for;
using testing::transport_options;

std::vector<std::string> all_transports() {
  return {std::begin(kTransportNames), std::end(kTransportNames)};
}

class Contract : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<World> world(int size, std::chrono::milliseconds timeout = 20'000ms) {
    return make_world(GetParam(), size, transport_options(timeout));
  }
};

TEST_P(Contract, SameTagArrivesInOrderAndTagsSeparateStreams) {
  world(2)->run([](Comm& c) {
    std::vector<int> v(5);
    if (c.rank() == 0) {
      std::vector<Request> rs;
      for (int i = 0; i < 3; ++i) {
        v[i] = i * 10;
        rs.push_back(c.isend(1, &v[i], sizeof(int), 7));
      }
      v[3] = 1;
      v[4] = 2;
      rs.push_back(c.isend(1, &v[3], sizeof(int), 1));
      rs.push_back(c.isend(1, &v[4], sizeof(int), 2));
      c.wait_all(rs);
    } else {
      // Tag 2 is posted first: it must not take tag 1's message.
      Request r2 = c.irecv(0, &v[4], sizeof(int), 2);
      Request r1 = c.irecv(0, &v[3], sizeof(int), 1);
      for (int i = 0; i < 3; ++i) c.recv(0, &v[i], sizeof(int), 7);
      c.wait(r1);
      c.wait(r2);
      EXPECT_EQ(v, (std::vector<int>{0, 10, 20, 1, 2}));
    }
  });
}

TEST_P(Contract, AMessageSentBeforeItsReceiveIsPostedArrivesIntact) {
  world(2)->run([](Comm& c) {
    // Small (copied whole) and large (streamed, or lent zero-copy).
    for (std::size_t n : {std::size_t{1000}, std::size_t{300'001}}) {
      std::vector<float> v(n, static_cast<float>(c.rank() + 1));
      if (c.rank() == 0) {
        c.send(1, v.data(), v.size() * sizeof(float), 3);
      } else {
        c.clock().sleep_until(c.clock().now() + 0.02);  // the send is posted first
        c.recv(0, v.data(), v.size() * sizeof(float), 3);
        EXPECT_EQ(v, std::vector<float>(n, 1.0f)) << n << " floats";
      }
    }
  });
}

TEST_P(Contract, ReceiveReduceCombinesIntoTheDestination) {
  world(3)->run([](Comm& c) {
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

TEST_P(Contract, SelfMessagesAreLocalAndUncounted) {
  world(2)->run([](Comm& c) {
    int a = 42 + c.rank(), b = 0;
    Request s = c.isend(c.rank(), &a, sizeof a, 3);
    Request r = c.irecv(c.rank(), &b, sizeof b, 3);
    c.wait(r);
    c.wait(s);
    EXPECT_EQ(b, 42 + c.rank());
    EXPECT_EQ(c.traffic().bytes_sent, 0u);
  });
}

TEST_P(Contract, CountsTrafficPerEndpoint) {
  world(3)->run([](Comm& c) {
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
    EXPECT_EQ(c.traffic().messages_received, 2u);
  });
}

TEST_P(Contract, SubGroupsTranslateRanksAndIsolateTags) {
  world(4)->run([](Comm& c) {
    // Two sub-groups {0,2} and {1,3}, both using tag 0 at once.
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

TEST_P(Contract, BarrierHoldsEveryoneUntilTheLastArrives) {
  // Rank r arrives r x 20 ms after it starts; nobody may leave before the
  // last one arrived. Each rank writes only its own slot, read after run().
  std::vector<double> arrived(4, 0), left(4, 0);
  world(4)->run([&](Comm& c) {
    c.clock().sleep_until(c.clock().now() + 0.02 * c.rank());
    arrived[static_cast<std::size_t>(c.rank())] = c.clock().now();
    c.barrier();
    left[static_cast<std::size_t>(c.rank())] = c.clock().now();
  });
  const double last = *std::max_element(arrived.begin(), arrived.end());
  for (int r = 0; r < 4; ++r) EXPECT_GE(left[static_cast<std::size_t>(r)], last) << "rank " << r;
}

TEST_P(Contract, SizeMismatchIsAnInvariantErrorNamingTheSizes) {
  try {
    world(2)->run([](Comm& c) {
      std::vector<char> buf(8);
      if (c.rank() == 0) {
        c.send(1, buf.data(), 8, 0);
      } else {
        c.recv(0, buf.data(), 4, 0);
      }
    });
    FAIL() << "expected an InvariantError";
  } catch (const InvariantError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0 sent 8 bytes to rank 1, whose receive expects 4"),
              std::string::npos)
        << e.what();
  }
}

TEST_P(Contract, ARankThatThrowsEndsItsPeersWithItsName) {
  std::atomic<int> named{0};
  const auto t0 = std::chrono::steady_clock::now();
  try {
    world(4, 60'000ms)->run([&](Comm& c) {
      if (c.rank() == 2) throw std::runtime_error("rank 2 broke on purpose");
      int x = 0;
      try {
        c.recv((c.rank() + 3) % 4, &x, sizeof x, 1);  // never sent
      } catch (const PeerLostError& e) {
        if (e.peer() == 2) named.fetch_add(1);
        throw;
      }
    });
    FAIL() << "the group should fail";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("on purpose"), std::string::npos) << e.what();
  }
  EXPECT_EQ(named.load(), 3);  // every waiting peer
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 20s) << "the peers waited out their timeout";
}

TEST_P(Contract, AWaitWithNothingComingEndsInATimeoutNamingThePeer) {
  try {
    world(2, 1000ms)->run([](Comm& c) {
      int x = 0;
      if (c.rank() == 0) c.recv(1, &x, sizeof x, 5);
    });
    FAIL() << "rank 0 should time out";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("receive from rank 1 (tag 5"), std::string::npos)
        << e.what();
  }
}

TEST_P(Contract, WaitAnyTakesWhicheverMessageCameFirst) {
  // Rank 2 sends at once; rank 1 only after rank 0 took rank 2's message,
  // so rank 0's first wait_any must return rank 2's receive whatever order
  // the receives were posted in. Rank 1's goes through a receive-reduce,
  // whose combination must happen exactly once.
  world(3)->run([](Comm& c) {
    if (c.rank() == 0) {
      std::vector<float> from1(4, 10.0f);
      float from2 = 0;
      std::vector<Request> rs;
      rs.push_back(c.irecv_reduce(1, Tensor{from1.data(), from1.size(), DType::f32},
                                  ReduceOp::sum, 4));
      rs.push_back(c.irecv(2, &from2, sizeof from2, 4));
      EXPECT_EQ(c.wait_any(rs), 1u);
      EXPECT_EQ(from2, 2.0f);
      EXPECT_FALSE(rs[1].pending());
      c.send(1, nullptr, 0, 5);  // rank 1 may send now
      EXPECT_EQ(c.wait_any(rs), 0u);
      EXPECT_EQ(from1, std::vector<float>(4, 11.0f));
      EXPECT_THROW(c.wait_any(rs), InvariantError);  // nothing left pending
    } else if (c.rank() == 1) {
      c.recv(0, nullptr, 0, 5);
      std::vector<float> v(4, 1.0f);
      c.send(0, v.data(), v.size() * sizeof(float), 4);
    } else {
      const float v = 2.0f;
      c.send(0, &v, sizeof v, 4);
    }
  });
}

TEST_P(Contract, WaitAnyInASubGroupAndItsTimeout) {
  try {
    world(3, 1000ms)->run([](Comm& c) {
      // Ranks {0, 2} as a group of two: sub-rank 1 (rank 2) sends once.
      if (c.rank() == 1) return;
      SubComm sub(c, {0, 2}, 1);
      int x = 0, y = 0;
      if (sub.rank() == 0) {
        std::vector<Request> rs;
        rs.push_back(sub.irecv(1, &x, sizeof x, 6));
        rs.push_back(sub.irecv(1, &y, sizeof y, 7));  // never sent
        EXPECT_EQ(sub.wait_any(rs), 0u);
        EXPECT_EQ(x, 42);
        sub.wait_any(rs);  // only tag 7 is left: times out
      } else {
        x = 42;
        sub.send(0, &x, sizeof x, 6);
      }
    });
    FAIL() << "the second wait_any should time out";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("receive from rank 2"), std::string::npos) << e.what();
  }
}

// The benchmark's straggler waits on its rank's clock on every transport:
// each timed iteration of the slowest worker includes the delay.
TEST_P(Contract, AStragglerIsInEveryTimedIteration) {
  SchemeOptions o;
  o.workers = 3;
  auto ring = make_scheme("ring", o);
  auto w = world(3);
  MeasureRequest req;
  req.count = 1024;
  req.warmup_iters = 0;
  req.iters = 3;
  req.straggler_ms = 15;
  const Measurement m = measure(*w, *ring, req);
  ASSERT_EQ(m.seconds.size(), 3u);
  for (double t : m.seconds) EXPECT_GE(t, 0.015);
  EXPECT_EQ(m.wrong, 0u);
}

INSTANTIATE_TEST_SUITE_P(Transports, Contract, ::testing::ValuesIn(all_transports()),
                         [](const auto& info) { return info.param; });

// ---- every scheme x every transport x sizes ----------------------------------

class SchemeOnTransport
    : public ::testing::TestWithParam<std::tuple<std::string, std::string, int>> {};

TEST_P(SchemeOnTransport, MatchesReferenceAndDeclaredTraffic) {
  const auto& [transport, name, n] = GetParam();
  auto scheme = make_scheme(name, options_for(n));
  const auto world = make_world(transport, scheme->endpoints(), transport_options());
  for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t(n) * 37 + 3,
                            std::size_t{200'003}}) {
    MeasureRequest req;
    req.count = count;
    req.warmup_iters = 1;
    req.iters = 2;
    const Measurement m = measure(*world, *scheme, req);
    EXPECT_EQ(m.wrong, 0u) << "count " << count;
    ASSERT_EQ(static_cast<int>(m.traffic.size()), scheme->endpoints());
    for (int e = 0; e < scheme->endpoints(); ++e) {
      EXPECT_EQ(m.traffic[e], scheme->expected_traffic(e, count, DType::f32))
          << "endpoint " << e << ", count " << count;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, SchemeOnTransport,
                         ::testing::Combine(::testing::ValuesIn(all_transports()),
                                            ::testing::ValuesIn(portable_scheme_names()),
                                            ::testing::Values(1, 2, 3, 4, 5)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param) +
                                  "_n" + std::to_string(std::get<2>(info.param));
                         });

}  // namespace
}  // namespace gradex
