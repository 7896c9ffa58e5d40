// The shared vocabulary: dtype conversions, reduce kernels, units, the
// closed-form inputs and the link model's arithmetic.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <future>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/comm.h"
#include "common/cost_model.h"
#include "common/dtype.h"
#include "common/errors.h"
#include "common/spelling.h"
#include "common/reduce.h"
#include "common/topology.h"
#include "common/tuned_table.h"
#include "common/units.h"
#include "common/verify.h"
#include "common/watchdog.h"
#include "config/tuned_table_file.h"

namespace gradex {
namespace {

// A guarded call that returns in time costs nothing; one that overruns is
// reported with its own text, whichever was armed first, and only once.
TEST(Watchdogs, ReportOnlyTheDeadlinesThatPass) {
  using namespace std::chrono_literals;
  std::promise<std::string> fired;
  Watchdog dog([&](const std::string& what) { fired.set_value(what); });
  {
    const WatchdogGuard in_time(dog, 10s, "returns in time");
  }
  const auto late = dog.arm(Watchdog::Clock::now() + 60s, "disarmed before its deadline");
  const auto soon = dog.arm(Watchdog::Clock::now() + 50ms, "overran");  // armed after, due first
  std::future<std::string> report = fired.get_future();
  ASSERT_EQ(report.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(report.get(), "overran");
  dog.disarm(late);
  dog.disarm(soon);  // already reported: nothing to do
}

// By default a deadline that passes ends the process with status 1 and says
// what overran, however the call is stuck.
TEST(WatchdogsDeathTest, EndTheProcessWithTheirText) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        Watchdog dog;
        const WatchdogGuard guard(dog, std::chrono::milliseconds(20), "rank 3: a call never returned");
        std::this_thread::sleep_for(std::chrono::seconds(30));  // a call that never returns
      },
      ::testing::ExitedWithCode(1), "gradex: rank 3: a call never returned");
}

TEST(DType, HalfRoundTripsEveryFiniteValue) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    const float f = half_to_float(bits);
    if (std::isnan(f)) continue;
    EXPECT_EQ(float_to_half(f), bits) << std::hex << h;
  }
}

TEST(DType, HalfRoundsToNearestEven) {
  EXPECT_EQ(half_to_float(float_to_half(1.0f + 1.0f / 2048)), 1.0f);  // tie -> even
  EXPECT_EQ(half_to_float(float_to_half(1.0f + 3.0f / 2048)), 1.0f + 2.0f / 1024);
  EXPECT_EQ(half_to_float(float_to_half(65520.0f)), INFINITY);        // overflow
  EXPECT_EQ(half_to_float(float_to_half(5.96e-8f)), 5.960464477539063e-8f);  // smallest subnormal
}

TEST(DType, Bf16KeepsIntegersAndRounds) {
  for (int i = -256; i <= 256; ++i) {
    EXPECT_EQ(bf16_to_float(float_to_bf16(static_cast<float>(i))), static_cast<float>(i));
  }
  EXPECT_EQ(bf16_to_float(float_to_bf16(257.0f)), 256.0f);  // tie -> even
  EXPECT_EQ(bf16_to_float(float_to_bf16(259.0f)), 260.0f);
}

TEST(DType, ParseNamesAndRejectsOthers) {
  EXPECT_EQ(parse_dtype("float"), DType::f32);
  EXPECT_EQ(parse_dtype("bf16"), DType::bf16);
  EXPECT_EQ(parse_dtype("half"), DType::f16);
  EXPECT_THROW(parse_dtype("f8"), ConfigError);
}

class ReduceKernels : public ::testing::TestWithParam<std::tuple<DType, ReduceOp>> {};

TEST_P(ReduceKernels, MatchDoubleReference) {
  const auto [dtype, op] = GetParam();
  const std::size_t n = 1003;
  std::vector<std::byte> a(n * dtype_size(dtype)), b(a.size()), out(a.size());
  Tensor ta{a.data(), n, dtype}, tb{b.data(), n, dtype}, to{out.data(), n, dtype};
  for (std::size_t i = 0; i < n; ++i) {
    store_element(ta, i, input_value(1, i));
    store_element(tb, i, input_value(4, i * 3));
  }
  reduce_pair(out.data(), a.data(), b.data(), n, dtype, op);
  reduce_into(a.data(), b.data(), n, dtype, op);
  for (std::size_t i = 0; i < n; ++i) {
    const double x = input_value(1, i), y = input_value(4, i * 3);
    const double want = op == ReduceOp::min ? std::min(x, y) : op == ReduceOp::max ? std::max(x, y) : x + y;
    EXPECT_EQ(load_element(to, i), want) << i;
    EXPECT_EQ(load_element(ta, i), want) << i;
  }
  finish_reduce(ta, op, 2);
  if (op == ReduceOp::avg) {
    const double x = input_value(1, 5), y = input_value(4, 15);
    const double want = dtype == DType::i32 ? static_cast<double>(static_cast<int>(x + y) / 2) : (x + y) / 2;
    EXPECT_EQ(load_element(ta, 5), want);
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, ReduceKernels,
                         ::testing::Combine(::testing::ValuesIn(kAllDTypes),
                                            ::testing::ValuesIn(kAllReduceOps)));

// The block kernels convert 16-bit floats on their own fast paths (F16C,
// branch-free bf16); adding zero must give back every finite value exactly
// and keep NaN a NaN.
TEST(ReduceKernels, SixteenBitPathsRoundTripEveryValue) {
  for (DType t : {DType::f16, DType::bf16}) {
    std::vector<std::uint16_t> all(0x10000), zero(0x10000, 0), out(0x10000);
    for (std::uint32_t i = 0; i < 0x10000; ++i) all[i] = static_cast<std::uint16_t>(i);
    reduce_pair(out.data(), all.data(), zero.data(), all.size(), t, ReduceOp::sum);
    for (std::uint32_t i = 0; i < 0x10000; ++i) {
      const float in = t == DType::f16 ? half_to_float(all[i]) : bf16_to_float(all[i]);
      const float got = t == DType::f16 ? half_to_float(out[i]) : bf16_to_float(out[i]);
      if (std::isnan(in)) {
        EXPECT_TRUE(std::isnan(got)) << dtype_name(t) << " " << std::hex << i;
      } else if (in == 0) {
        EXPECT_EQ(got, 0.0f);  // -0 + +0 is +0
      } else {
        EXPECT_EQ(out[i], all[i]) << dtype_name(t) << " " << std::hex << i;
      }
    }
  }
}

TEST(Verify, CountsWrongElements) {
  const int workers = 5;
  std::vector<float> v(100);
  Tensor t{v.data(), v.size(), DType::f32};
  for (std::size_t i = 0; i < v.size(); ++i) {
    double s = 0;
    for (int r = 0; r < workers; ++r) s += input_value(r, i);
    v[i] = static_cast<float>(s);
  }
  EXPECT_EQ(count_wrong(t, workers, ReduceOp::sum), 0u);
  v[17] += 1;
  v[99] = -v[99] + 1;
  EXPECT_EQ(count_wrong(t, workers, ReduceOp::sum), 2u);
  EXPECT_GT(count_wrong(t, workers, ReduceOp::max), 0u);
}

TEST(Units, ParsesSizesRatesAndDurations) {
  EXPECT_EQ(parse_bytes("4096", "f"), 4096u);
  EXPECT_EQ(parse_bytes("16MiB", "f"), 16u << 20);
  EXPECT_EQ(parse_bytes("4 KiB", "f"), 4096u);
  EXPECT_EQ(parse_bytes("1GB", "f"), 1'000'000'000u);
  EXPECT_DOUBLE_EQ(parse_rate("25GB/s", "f"), 25e9);
  EXPECT_DOUBLE_EQ(parse_rate("200Gbps", "f"), 25e9);
  EXPECT_DOUBLE_EQ(parse_rate("1 Gbps", "f"), 125e6);
  EXPECT_DOUBLE_EQ(parse_duration("50us", "f"), 50e-6);
  EXPECT_DOUBLE_EQ(parse_duration("1.5ms", "f"), 1.5e-3);
  // Exponents with a sign ("1e-300B/s" was read as 1 in the unit "e-300B/s").
  EXPECT_DOUBLE_EQ(parse_rate("1e-3GB/s", "f"), 1e6);
  EXPECT_DOUBLE_EQ(parse_rate("2E+1 Gbps", "f"), 2.5e9);
  EXPECT_DOUBLE_EQ(parse_duration("2e-6s", "f"), 2e-6);
  EXPECT_EQ(parse_bytes("1e3", "f"), 1000u);
  EXPECT_DOUBLE_EQ(parse_rate("1e-300B/s", "f"), 1e-300);  // parsed; the link range refuses it
  EXPECT_THROW(parse_rate("1e-GB/s", "f"), ConfigError);
  EXPECT_THROW(parse_bytes("12 parsecs", "f"), ConfigError);
  EXPECT_THROW(parse_bytes("-4", "f"), ConfigError);
  EXPECT_THROW(parse_bytes("1.5", "f"), ConfigError);
  EXPECT_THROW(parse_rate("0GB/s", "f"), ConfigError);
  EXPECT_THROW(parse_duration("5 fortnights", "f"), ConfigError);
  try {
    parse_bytes("lots", "/sizes/3");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "/sizes/3");
  }
}

// The spellings users bring from datasheets and nccl-tests; the case of a
// unit matters only where it tells bits from bytes.
TEST(Units, AcceptsTheCommonSpellingsAndKeepsBitsApartFromBytes) {
  EXPECT_EQ(parse_bytes("16mib", "f"), 16u << 20);
  EXPECT_EQ(parse_bytes("1gb", "f"), 1'000'000'000u);
  EXPECT_EQ(parse_bytes("4k", "f"), 4096u);
  EXPECT_DOUBLE_EQ(parse_rate("200Gbit/s", "f"), 25e9);
  EXPECT_DOUBLE_EQ(parse_rate("200 gbit/s", "f"), 25e9);
  EXPECT_DOUBLE_EQ(parse_rate("400Gb/s", "f"), 50e9);
  EXPECT_DOUBLE_EQ(parse_rate("100 Mb/s", "f"), 12.5e6);
  EXPECT_DOUBLE_EQ(parse_rate("100mib/s", "f"), 100.0 * 1048576);
  EXPECT_DOUBLE_EQ(parse_rate("25GB/s", "f"), 8 * parse_rate("25Gb/s", "f"));
  EXPECT_THROW(parse_rate("25gb/s", "f"), ConfigError);  // gigabits or gigabytes?
  try {
    parse_rate("25gb/s", "/network/inter_node/bandwidth");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "/network/inter_node/bandwidth");
    EXPECT_NE(std::string(e.what()).find("unknown unit 'gb/s'"), std::string::npos) << e.what();
  }
}

TEST(Spelling, SuggestsOnlyWhatIsASlip) {
  const std::vector<std::string> names = {"ring", "tree", "ps", "hierarchical", "timeout_ms"};
  EXPECT_EQ(closest_spelling("rnig", names), "ring");            // a swap
  EXPECT_EQ(closest_spelling("hierarchal", names), "hierarchical");  // two letters dropped
  EXPECT_EQ(closest_spelling("timeout", names), "");             // three edits: not a slip
  EXPECT_EQ(closest_spelling("px", names), "");                  // one edit of two letters
  EXPECT_EQ(closest_spelling("allreduce", names), "");
  EXPECT_EQ(did_you_mean("tre", names), " (did you mean 'tree'?)");
  EXPECT_EQ(did_you_mean("zzz", names), "");
}

TEST(LinkShaper, SerialisesAtTheSharedIngress) {
  // Four workers push 1 MB each to one server at 1 MB/s: the server's
  // ingress takes them one after another (the PS bottleneck of claims A1-A3).
  LinkSpec link{1e6, 0.001};
  LinkShaper shaper(Topology::grouped(4, 1, 1, {}, link));
  // Each worker's own NIC is free again after its second.
  for (int w = 0; w < 4; ++w) {
    const auto t = shaper.reserve(w, 4, 1'000'000, 0.0);
    EXPECT_DOUBLE_EQ(t.sender_free, 1.0);
    EXPECT_DOUBLE_EQ(t.arrival, w + 1.0 + 0.001);
  }
}

TEST(LinkShaper, ABusyReceiverDoesNotHoldTheSender) {
  // Worker 1's push to the server waits for worker 0's at the server's
  // ingress, but worker 1's NIC sends its next message, to worker 2, from
  // the second its first left it: each half of the link is booked alone.
  LinkShaper shaper(Topology::grouped(4, 1, 1, {}, {1e6, 0}));
  EXPECT_DOUBLE_EQ(shaper.reserve(0, 4, 1'000'000, 0.0).arrival, 1.0);
  EXPECT_DOUBLE_EQ(shaper.reserve(1, 4, 1'000'000, 0.0).arrival, 2.0);
  const auto next = shaper.reserve(1, 2, 1'000'000, 0.0);
  EXPECT_DOUBLE_EQ(next.sender_free, 2.0);
  EXPECT_DOUBLE_EQ(next.arrival, 2.0);
}

TEST(LinkShaper, ASwitchPortRunsAtTheSwitchsRate) {
  // Two GPUs at 1 MB/s each, a switch summing at 0.5 MB/s per port: a
  // GPU's 1 MB leaves its own port in a second and is taken in two.
  Topology t = Topology::grouped(2, 2, 2, {1e6, 0}, {1e6, 0});
  t.add_switch(2, 2, {0.5e6, 0}, /*in_node=*/true);
  EXPECT_TRUE(t.same_node(0, 3));
  LinkShaper shaper(t);
  const auto push = shaper.reserve(0, 2, 1'000'000, 0.0);
  EXPECT_DOUBLE_EQ(push.sender_free, 1.0);
  EXPECT_DOUBLE_EQ(push.arrival, 2.0);
  // The sum back: the switch's port sends for two seconds, the GPU takes it.
  const auto pull = shaper.reserve(3, 1, 1'000'000, 0.0);
  EXPECT_DOUBLE_EQ(pull.sender_free, 2.0);
  EXPECT_DOUBLE_EQ(pull.arrival, 2.0);
}

TEST(Topology, SwitchPortsThatMulticastRunAtTheShareOfTheOwnersTrip) {
  // NVLS takes each slice's sum to its owner GPU and back: on 4 GPUs a
  // port carries 5/4 of the payload, so ports that multicast the sum
  // themselves run at 4/5 of the switch's rate.
  Topology t = Topology::grouped(4, 4, 4, {1e6, 0}, {1e6, 0});
  t.add_switch(4, 4, {1e6, 0}, /*in_node=*/true, /*ports_multicast=*/true);
  EXPECT_DOUBLE_EQ(t.port_rate(5, 1), 0.8e6);
  EXPECT_DOUBLE_EQ(t.port_rate(1, 5), 1e6);  // the GPU's own NVLink port
  // Without the flag (a scheme that makes the trip in its own messages),
  // and across nodes (SHARP, which multicasts from the switch), the rate.
  Topology own = Topology::grouped(4, 4, 4, {1e6, 0}, {1e6, 0});
  own.add_switch(4, 4, {1e6, 0}, /*in_node=*/true);
  EXPECT_DOUBLE_EQ(own.port_rate(5, 1), 1e6);
  Topology sharp = Topology::grouped(4, 1, 4, {1e6, 0}, {1e6, 0});
  sharp.add_switch(4, 4, {1e6, 0}, /*in_node=*/false, /*ports_multicast=*/true);
  EXPECT_DOUBLE_EQ(sharp.port_rate(5, 1), 1e6);
  // The owner's trip is modelled for the GPUs of one node.
  Topology two_nodes = Topology::grouped(4, 2, 4, {1e6, 0}, {1e6, 0});
  EXPECT_THROW(two_nodes.add_switch(4, 4, {1e6, 0}, /*in_node=*/true, /*ports_multicast=*/true),
               InvariantError);
}

TEST(LinkShaper, ZeroByteSignalsDoNotQueueBehindData) {
  // Worker 0 books worker 1's ingress for a second; worker 3's barrier
  // signal to worker 1 still arrives after the latency alone.
  LinkShaper shaper(Topology::grouped(4, 1, 0, {}, {1e6, 0.001}));
  EXPECT_DOUBLE_EQ(shaper.reserve(0, 1, 1'000'000, 0.0).arrival, 1.001);
  const auto signal = shaper.reserve(3, 1, 0, 0.5);
  EXPECT_DOUBLE_EQ(signal.sender_free, 0.5);
  EXPECT_DOUBLE_EQ(signal.arrival, 0.501);
  // ...and leaves the data bookings as they were.
  EXPECT_DOUBLE_EQ(shaper.reserve(2, 1, 1'000'000, 0.5).arrival, 2.001);
}

TEST(LinkShaper, DisjointPairsDoNotInterfere) {
  LinkShaper shaper(Topology::grouped(4, 1, 0, {}, {1e6, 0}));
  for (int w = 0; w < 4; ++w) {
    EXPECT_DOUBLE_EQ(shaper.reserve(w, (w + 1) % 4, 500'000, 2.0).arrival, 2.5);
  }
}

TEST(LinkShaper, IntraAndInterNodeRates) {
  Topology t = Topology::grouped(4, 2, 0, {8e6, 0}, {1e6, 0});
  LinkShaper shaper(t);
  EXPECT_DOUBLE_EQ(shaper.reserve(0, 1, 8'000'000, 0).arrival, 1.0);  // same node
  EXPECT_DOUBLE_EQ(shaper.reserve(1, 2, 1'000'000, 0).arrival, 1.0);  // across nodes
  EXPECT_EQ(t.nodes(), 2);
  // 4 intra ports at 8 MB/s + 4 inter ports at 1 MB/s.
  EXPECT_DOUBLE_EQ(t.egress_capacity(), 36e6);
}

TEST(CostModel, MessagesOnASharedNicTakeTurns) {
  const LinkSpec inter{1e6, 0.5};
  // Ranks 0-1 on node 0, 2-3 on node 1: 0->2 and 1->3 cross at once.
  const std::vector<std::pair<int, int>> across{{0, 2}, {1, 3}};
  Topology own = Topology::grouped(4, 2, 0, {}, inter);
  EXPECT_DOUBLE_EQ(slowest_message(own, across, 1e6), 1.5);
  Topology shared = Topology::grouped(4, 2, 0, {}, inter, /*nic_per_node=*/true);
  EXPECT_DOUBLE_EQ(slowest_message(shared, across, 1e6), 2.5);
  // One message per NIC each way (a ring's hops 1->2 and 3->0): no turns.
  EXPECT_DOUBLE_EQ(slowest_message(shared, {{1, 2}, {3, 0}}, 1e6), 1.5);
  // Inside a node each endpoint keeps its own port.
  EXPECT_DOUBLE_EQ(slowest_message(shared, {{0, 1}, {1, 0}}, 1e6), 0.0);
  EXPECT_EQ(port_to(shared, 0, 2), port_to(shared, 1, 3));
  EXPECT_NE(port_to(own, 0, 2), port_to(own, 1, 3));
  EXPECT_NE(port_to(shared, 0, 1), port_to(shared, 0, 2));
}

// Ranks 0-1 and 2-3 on two nodes: the ring's hops cost 1, 10, 1 and 10 us
// of latency (0->1, 1->2, 2->3, 3->0). 6 steps of small blocks follow a
// chain of 6 consecutive hops: one lap (22 us) and the costliest 2 more
// (11 us), not 6 times the slowest hop (60 us). With large blocks the
// NICs, busy every step, pace the ring and hide the latencies but the
// last one.
// detail::flow_ends answers from node_of where no endpoint is a switch's
// port, as port_to, Topology::link, port_rate and crosses_spine do; the
// general path (flow_ends_through_switches) asks them. Both must agree on
// every pair, shared NICs and a second tier included.
TEST(CostModel, FlowEndsWithoutSwitchesAnswerAsTheTopology) {
  const LinkSpec nvlink{300e9, 1e-6}, nic{25e9, 5e-6};
  for (const bool shared : {false, true}) {
    for (const int per_leaf : {0, 2}) {
      Topology t = Topology::grouped(12, 4, 2, nvlink, nic, shared);
      t.nodes_per_leaf = per_leaf;
      t.oversubscription = 4;
      for (int a = 0; a < t.endpoints(); ++a) {
        for (int b = 0; b < t.endpoints(); ++b) {
          const detail::FlowEnds fast = detail::flow_ends(t, a, b);
          const detail::FlowEnds asked = detail::flow_ends_through_switches(t, a, b);
          SCOPED_TRACE(testing::Message() << a << " -> " << b << (shared ? ", shared NIC" : "")
                                          << ", leaves of " << per_leaf);
          EXPECT_EQ(fast.link, asked.link);
          EXPECT_EQ(fast.egress, asked.egress);
          EXPECT_EQ(fast.ingress, asked.ingress);
          EXPECT_EQ(fast.egress_rate, asked.egress_rate);
          EXPECT_EQ(fast.ingress_rate, asked.ingress_rate);
          EXPECT_EQ(fast.up_leaf, asked.up_leaf);
          EXPECT_EQ(fast.down_leaf, asked.down_leaf);
        }
      }
    }
  }
}

TEST(CostModel, ARingsLatenciesAddAlongTheChainItsStepsFollow) {
  const Topology t = Topology::grouped(4, 2, 0, {8e9, 1e-6}, {1e9, 10e-6});
  // One byte: the chain crosses a NIC 3 times (1 ns each) and NVLink 3 times.
  EXPECT_NEAR(rings_time(t, {{0, 1, 2, 3}}, 1, 6), 33e-6 + 3 * 1e-9 + 3 * 0.125e-9, 1e-15);
  const double bytes = 1e6;  // 1 ms on a NIC, an eighth of that inside the node
  EXPECT_NEAR(rings_time(t, {{0, 1, 2, 3}}, bytes, 6), 6 * 1e-3 + 10e-6, 1e-12);
  EXPECT_NEAR(rings_time(t, {{0, 1, 2, 3}}, bytes, 1), 1e-3 + 10e-6, 1e-12);
  // One kind of link: the textbook steps x (latency + transfer).
  const Topology flat = Topology::grouped(4, 1, 0, {}, {1e9, 10e-6});
  EXPECT_DOUBLE_EQ(rings_time(flat, {{0, 1, 2, 3}}, bytes, 6), 6 * (10e-6 + 1e-3));
  // Two rings whose hops cross on one shared NIC take turns on it.
  const Topology shared = Topology::grouped(4, 2, 0, {8e9, 1e-6}, {1e9, 10e-6}, /*nic_per_node=*/true);
  EXPECT_NEAR(rings_time(shared, {{0, 2}, {1, 3}}, bytes, 2), 2 * (10e-6 + 2e-3), 1e-12);
}

// A block in segments: each step's chain pays one segment's transfer and
// latency, the last block's other segments follow behind, and the busiest
// port still moves every byte; the larger of the two paces the ring.
TEST(CostModel, ARingInSegmentsPaysOneSegmentsLatencyPerStep) {
  const Topology flat = Topology::grouped(4, 1, 0, {}, {1e9, 10e-6});
  const double block = 1e6;  // 1 ms a block, 8 segments of 125 us
  const double latency = 10e-6;
  // Latency-light: the port is busy throughout, one latency at the end.
  EXPECT_NEAR(rings_time(flat, {{0, 1, 2, 3}}, block, 3, 8), 3 * 1e-3 + latency, 1e-12);
  // Latency-heavy: 1 KB blocks in 8 segments of 125 ns behind 10 us hops.
  EXPECT_NEAR(rings_time(flat, {{0, 1, 2, 3}}, 1e3, 3, 8), 3 * (latency + 125e-9) + 7 * 125e-9, 1e-15);
  // Two phases one after the other: the port's pace pays the latency that
  // brings the first phase's last segment in, the chain pays both phases.
  EXPECT_NEAR(rings_time(flat, {{0, 1, 2, 3}}, block, 3, 8, 2), 6 * 1e-3 + 2 * latency, 1e-12);
  EXPECT_NEAR(rings_time(flat, {{0, 1, 2, 3}}, 1e3, 3, 8, 2), 2 * (3 * (latency + 125e-9) + 7 * 125e-9),
              1e-15);
  // One segment: the block's single message, as without segments.
  EXPECT_DOUBLE_EQ(rings_time(flat, {{0, 1, 2, 3}}, block, 6, 1), 6 * (latency + 1e-3));
}

TEST(LinkShaper, SharedNodeNicSerialisesTheNode) {
  Topology t = Topology::grouped(4, 2, 0, {}, {1e6, 0}, /*nic_per_node=*/true);
  LinkShaper shaper(t);
  EXPECT_DOUBLE_EQ(shaper.reserve(0, 2, 1'000'000, 0).arrival, 1.0);
  EXPECT_DOUBLE_EQ(shaper.reserve(1, 3, 1'000'000, 0).arrival, 2.0);  // same NIC pair
}

// A tuned table answers a size with the nearest tuned size at or below it,
// below every tuned size with the smallest, and nothing for worker counts
// it was not tuned on.
TEST(TunedTable, TheNearestTunedSizeAtOrBelowDecides) {
  TunedTable t;
  t.choices = {{4, 4096, "a"}, {4, 1 << 20, "b"}, {8, 4096, "c"}};
  EXPECT_EQ(t.find(4, 4096)->scheme, "a");
  EXPECT_EQ(t.find(4, (1 << 20) - 1)->scheme, "a");
  EXPECT_EQ(t.find(4, 1 << 30)->scheme, "b");
  EXPECT_EQ(t.find(4, 8)->scheme, "a");
  EXPECT_EQ(t.find(8, 1 << 30)->scheme, "c");
  EXPECT_EQ(t.find(2, 4096), nullptr);
  EXPECT_EQ(t.worker_counts(), (std::vector<int>{4, 8}));
}

// gradex tune measures again the candidates within a margin of a size's
// fastest at some size: in the candidates' order, each once, and none that
// trails at every size.
TEST(TunedTable, ContendersAreWithinTheMarginOfASizesFastestSomewhere) {
  const std::vector<TunedSize> sizes = {
      {4, 4096, {{"a", 1.00}, {"b", 1.05}, {"c", 1.50}, {"d", 2.00}}},
      {4, 1 << 20, {{"a", 3.00}, {"b", 2.50}, {"c", 2.75}, {"d", 2.76}}}};
  EXPECT_EQ(contenders(sizes, {"d", "c", "b", "a"}, 0.10),
            (std::vector<std::string>{"c", "b", "a"}));
  EXPECT_EQ(contenders(sizes, {"a", "b", "c", "d"}, 0.0), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(contenders(sizes, {"a", "b", "c", "d"}, 0.11),
            (std::vector<std::string>{"a", "b", "c", "d"}));
}

// One rank that sends to itself, and cannot fuse a receive with its
// reduction: the base Comm receives into scratch memory and reduces in
// wait(), a continuation that a sub-group must run exactly once however its
// requests are waited for.
class UnfusedLoopback final : public Comm {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Clock& clock() override { return clock_; }
  std::chrono::milliseconds timeout() const override { return std::chrono::milliseconds(100); }
  // The request the last wait_state() was told it waits for, and the one
  // it would be told now (none outside a wait).
  const Request* seen_in_wait = nullptr;
  const Request* in_wait_now() const { return request_in_wait(); }

 protected:
  struct Op final : RequestState {
    Tag tag = 0;
    const void* from = nullptr;
    void* into = nullptr;
    std::size_t bytes = 0;
    bool done = false;
  };
  std::shared_ptr<RequestState> start_send(int, const void* data, std::size_t bytes, Tag tag) override {
    return post(tag, data, nullptr, bytes, sends_, recvs_);
  }
  std::shared_ptr<RequestState> start_recv(int, void* data, std::size_t bytes, Tag tag) override {
    return post(tag, nullptr, data, bytes, recvs_, sends_);
  }
  void wait_state(RequestState& state) override {
    seen_in_wait = request_in_wait();
    if (!own(&state).done) throw TimeoutError("nothing matched");
  }
  std::size_t wait_any_state(std::span<RequestState* const> states) override {
    for (std::size_t i = 0; i < states.size(); ++i) {
      if (own(states[i]).done) return i;
    }
    throw TimeoutError("nothing matched");
  }

 private:
  // A state this Comm made, or an error (a sub-group passing on its own).
  static Op& own(RequestState* state) {
    auto* op = dynamic_cast<Op*>(state);
    if (op == nullptr) throw InvariantError("a request this group did not post");
    return *op;
  }
  // A send (`from`) or receive (`into`), paired with the oldest of the
  // other side on its tag, or queued.
  static std::shared_ptr<Op> post(Tag tag, const void* from, void* into, std::size_t bytes,
                                  std::deque<std::shared_ptr<Op>>& mine,
                                  std::deque<std::shared_ptr<Op>>& theirs) {
    auto op = std::make_shared<Op>();
    op->tag = tag;
    op->from = from;
    op->into = into;
    op->bytes = bytes;
    for (auto it = theirs.begin(); it != theirs.end(); ++it) {
      if ((*it)->tag != op->tag) continue;
      Op& send = op->from ? *op : **it;
      Op& recv = op->from ? **it : *op;
      std::memcpy(recv.into, send.from, send.bytes);
      send.done = recv.done = true;
      theirs.erase(it);
      return op;
    }
    mine.push_back(op);
    return op;
  }
  WallClock clock_;
  std::deque<std::shared_ptr<Op>> sends_, recvs_;
};

// A rule gives the members a list would, and finds each one's position
// back: contiguous, strided, and rotated within blocks with a short last
// block (rail rings over 20 ranks in nodes of 8, channel 3).
TEST(SubGroups, RuleMembersAreTheListTheyStandFor) {
  const auto by_rule = [](const GroupMembers& m) {
    std::vector<int> out;
    for (int i = 0; i < m.size(); ++i) out.push_back(m.at(i));
    return out;
  };
  EXPECT_EQ(by_rule(GroupMembers::rule(4, 8, 1)), (std::vector<int>{8, 9, 10, 11}));
  EXPECT_EQ(by_rule(GroupMembers::rule(3, 2, 8)), (std::vector<int>{2, 10, 18}));
  EXPECT_EQ(by_rule(GroupMembers::rule(20, 0, 1, 8, 3)),
            (std::vector<int>{3, 4, 5, 6, 7, 0, 1, 2, 11, 12, 13, 14, 15, 8, 9, 10,  //
                              19, 16, 17, 18}));
  for (const GroupMembers& m : {GroupMembers::rule(4, 8, 1), GroupMembers::rule(3, 2, 8),
                                GroupMembers::rule(20, 0, 1, 8, 3), GroupMembers{5, 1, 3}}) {
    EXPECT_EQ(m.list(), by_rule(m));
    for (int i = 0; i < m.size(); ++i) EXPECT_EQ(m.position_of(m.at(i)), i);
  }
  EXPECT_EQ(GroupMembers::rule(3, 2, 8).position_of(3), -1);   // between two members
  EXPECT_EQ(GroupMembers::rule(3, 2, 8).position_of(26), -1);  // past the last
  EXPECT_EQ(GroupMembers::rule(3, 2, 8).position_of(0), -1);   // before the first
  EXPECT_EQ(GroupMembers::rule(3, 2, 8).outside(18), 18);  // members 2, 10, 18 of ranks [0, 18)
  EXPECT_FALSE(GroupMembers::rule(3, 2, 8).outside(19).has_value());
  EXPECT_EQ((GroupMembers{0, -1, 2}).outside(4), -1);
  EXPECT_THROW(GroupMembers::rule(0, 0, 1), InvariantError);
}

TEST(SubGroups, ReduceOnceWhereTheirParentCannotFuseAReceiveWithItsReduction) {
  UnfusedLoopback root;
  SubComm outer(root, {0}, 3);
  SubComm inner(outer, {0}, 5);  // a forwarded request forwarded again
  std::vector<float> mine{1, 2, 3, 4};
  const std::vector<float> theirs{10, 20, 30, 40};
  const Tensor dst{mine.data(), mine.size(), DType::f32};
  const std::size_t bytes = theirs.size() * sizeof(float);

  Request received = inner.irecv_reduce(0, dst, ReduceOp::sum, 7);
  Request sent = inner.isend(0, theirs.data(), bytes, 7);
  inner.wait(received);
  inner.wait(sent);
  EXPECT_EQ(mine, (std::vector<float>{11, 22, 33, 44}));

  // Through wait_any, next to a plain receive that stays pending.
  float other = 0;
  std::vector<Request> pending;
  pending.push_back(inner.irecv(0, &other, sizeof other, 8));
  pending.push_back(inner.irecv_reduce(0, dst, ReduceOp::sum, 7));
  sent = inner.isend(0, theirs.data(), bytes, 7);
  EXPECT_EQ(inner.wait_any(pending), 1u);
  inner.wait(sent);
  EXPECT_EQ(mine, (std::vector<float>{21, 42, 63, 84}));
  EXPECT_THROW(inner.wait(pending[0]), TimeoutError);
}

// A transport learns which request a wait is in (the simulator fetches
// where a scheme keeps its requests ahead of the rank's turn), through
// sub-groups too, and only for the length of the wait.
TEST(SubGroups, TellTheirParentWhichRequestAWaitIsIn) {
  UnfusedLoopback root;
  SubComm outer(root, {0}, 3);
  SubComm inner(outer, {0}, 5);
  const float sent_value = 1;
  float received_value = 0;
  Request received = root.irecv(0, &received_value, sizeof received_value, 9);
  Request sent = root.isend(0, &sent_value, sizeof sent_value, 9);
  root.wait(received);
  EXPECT_EQ(root.seen_in_wait, &received);
  root.wait(sent);
  EXPECT_EQ(root.seen_in_wait, &sent);
  EXPECT_EQ(root.in_wait_now(), nullptr);

  received = inner.irecv(0, &received_value, sizeof received_value, 9);
  sent = inner.isend(0, &sent_value, sizeof sent_value, 9);
  inner.wait(sent);
  EXPECT_EQ(root.seen_in_wait, &sent);
  inner.wait(received);
  EXPECT_EQ(root.seen_in_wait, &received);
  EXPECT_EQ(root.in_wait_now(), nullptr);

  // A wait that throws leaves none behind either.
  Request unmatched = inner.irecv(0, &received_value, sizeof received_value, 10);
  EXPECT_THROW(inner.wait(unmatched), TimeoutError);
  EXPECT_EQ(root.seen_in_wait, &unmatched);
  EXPECT_EQ(root.in_wait_now(), nullptr);
}

}  // namespace
}  // namespace gradex
