// The three ways a scheme's time is known must agree: its alpha-beta model
// (Scheme::predicted_time), the simulator, and a shaped run on real threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "config/link_presets.h"
#include "runner/measure.h"
#include "schemes/registry.h"
#include "runner/simulate.h"
#include "schemes/auto_scheme.h"
#include "allreduce/rail_rings.h"

namespace gradex::sim {
namespace {

constexpr double kGB = 1e9;

// How closely the simulation must reproduce each model on a topology where
// the model's assumptions hold: to rounding, the double tree included (its
// model climbs the tree a hop at a time, two children sharing their
// parent's port), but for ps_hybrid, an approximation the report flags as
// such. The PS models count every port's bytes in each phase, so
// co-located servers (whose pushes and replies share a NIC) are exact; for
// ps_hybrid that count is BytePS's Theorem 1, which its ring of the
// workers' keys meets once the latencies are small beside the bytes
// (HybridPsMeetsTheoremOne checks it at 1 GB). On these small messages the
// ring's chain paces it, beside the servers' round: exact at 2 and 4
// workers, 0.5% above the simulation at 8 (the model that added the
// chain's latencies to the ports' bytes was allowed 10%).
double tolerance(const std::string& name) {
  if (name == "ps_hybrid") return 0.01;
  // Its model takes a chunk up and down the deeper tree level by level,
  // each level at its slowest flow, where the levels' flows do not all
  // start at once.
  if (name == "in_network_tree") return 0.1;
  return 1e-9;
}

// What the model predicts for one all-reduce of `bytes`, launch included.
double modelled(const Scheme& scheme, std::size_t bytes, const Topology& topology) {
  return scheme.predicted_time(Collective::all_reduce, bytes, topology);
}

// Scheme `name` on 4 workers in nodes of 2 (10 GB/s inside, 1 GB/s
// between, one server for the PS schemes), and an all-reduce of `count`
// floats on them.
std::pair<std::unique_ptr<Scheme>, SimRequest> on_two_nodes_of_two(const std::string& name,
                                                                   std::size_t count) {
  SchemeOptions o;
  o.workers = 4;
  o.ranks_per_node = 2;
  o.servers = 1;
  auto scheme = make_scheme(name, o);
  SimRequest req;
  req.count = count;
  req.topology = Topology::grouped(4, 2, scheme->endpoints() - 4, {10 * kGB, 1e-6},
                                   {1 * kGB, 5e-6});
  return {std::move(scheme), std::move(req)};
}

// A straggler: no scheme can finish before the last worker, which enters
// 1 ms late, has contributed, and none gets faster. How much of the delay
// a scheme hides depends on it: the ring's lock-step passes lose all of
// it, while a PS whose server is the bottleneck can hide it behind the
// other workers' pushes.
TEST(Straggler, NoSchemeFinishesBeforeTheLateWorker) {
  for (const std::string& name : portable_scheme_names()) {
    auto [scheme, req] = on_two_nodes_of_two(name, std::size_t{1} << 18);
    const double plain = simulate_allreduce(*scheme, req).seconds;
    req.straggler_ms = 1;
    const double late = simulate_allreduce(*scheme, req).seconds;
    EXPECT_GE(late, plain - 1e-12) << name;
    EXPECT_GE(late, 0.001) << name;
    if (name == "ring") {
      EXPECT_NEAR(late, plain + 0.001, 1e-9);
    }
  }
}

// A GPU library's collective pays its launch once, before its first
// message, on every rank (Topology::launch_seconds): every scheme then ends
// exactly the launch later, a scheme calling another's collective inside
// its own (hierarchical, auto) pays it once, and the model says the same.
TEST(Launch, EverySchemePaysItOncePerCollective) {
  constexpr double kLaunch = 7e-6;
  for (const std::string& name : portable_scheme_names()) {
    auto [scheme, req] = on_two_nodes_of_two(name, std::size_t{1} << 16);
    const double plain = simulate_allreduce(*scheme, req).seconds;
    const double plain_model = modelled(*scheme, req.count * 4, req.topology);
    req.topology.inter.launch_seconds = kLaunch;
    EXPECT_NEAR(simulate_allreduce(*scheme, req).seconds, plain + kLaunch, 1e-12) << name;
    EXPECT_NEAR(modelled(*scheme, req.count * 4, req.topology), plain_model + kLaunch, 1e-12)
        << name;
  }
}

// Inside a DGX A100 the ring at 8 bytes is NCCL's own model of it
// (tuning.cc: base latency 3.6 us, 0.47 us per LL step over NVLink):
// 3.6 + 2 (8 - 1) x 0.47 = 10.18 us, and the bytes' transfers, under a
// nanosecond.
TEST(Launch, EightA100sAtEightBytesTakeNcclsModelledTime) {
  SchemeOptions o;
  o.workers = 8;
  auto ring = make_scheme("ring", o);
  SimRequest req;
  req.count = 2;
  req.topology = Topology::grouped(8, 8, 0, find_link_preset("a100_nvlink", "test"),
                                   find_link_preset("ib_hdr_200g", "test"));
  EXPECT_NEAR(simulate_allreduce(*ring, req).seconds, 10.18e-6, 1e-9);
  EXPECT_NEAR(modelled(*ring, 8, req.topology), 10.18e-6, 1e-9);
}

class ModelVsSim : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(ModelVsSim, AgreeWithoutContention) {
  const auto& [name, n] = GetParam();
  SchemeOptions o;
  o.workers = n;
  o.segment_bytes = std::size_t{1} << 30;  // one message per step
  o.ranks_per_node = 2;                    // hierarchical: nodes of two
  o.servers = 2;
  auto scheme = make_scheme(name, o);
  // Flat for the flat schemes (a ring mixing fast and slow hops gets slack
  // the step-by-step model does not count); two-level for hierarchical.
  const int per_node = name == "hierarchical" ? 2 : 1;
  SimRequest req;
  req.count = std::size_t(n) * 3 * 4096;
  req.topology = Topology::grouped(n, per_node, scheme->endpoints() - n, {100 * kGB, 1e-6},
                                   {10 * kGB, 5e-6});
  const double simulated = simulate_allreduce(*scheme, req).seconds;
  const double model = modelled(*scheme, req.count * 4, req.topology);
  ASSERT_GT(model, 0);
  EXPECT_NEAR(simulated / model, 1.0, tolerance(name)) << "sim " << simulated << " model " << model;
}


// Powers of two: halving-doubling's fold (n != 2^k) makes two flows share
// a port, which its model does not count.
INSTANTIATE_TEST_SUITE_P(Registry, ModelVsSim,
                         ::testing::Combine(::testing::ValuesIn(portable_scheme_names()),
                                            ::testing::Values(2, 4, 8)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_n" +
                                  std::to_string(std::get<1>(info.param));
                         });

// Nodes of two sharing one NIC (Topology::nic_per_node): the exchanges'
// models let messages that meet on a node's NIC take turns, as the
// simulator does. Recursive doubling and halving-doubling pair ranks 0-2
// and 1-3 across the same two NICs, so a shared NIC doubles their steps
// between nodes. (The ring crosses each NIC once per step either way; its
// mix of fast and slow hops is the slack AgreeWithoutContention avoids.)
TEST(ModelVsSim, SharedNodeNicMakesMessagesTakeTurns) {
  for (const std::string name : {"recursive_doubling", "halving_doubling", "hierarchical"}) {
    for (int n : {4, 8}) {
      SchemeOptions o;
      o.workers = n;
      o.segment_bytes = std::size_t{1} << 30;  // one message per step
      o.ranks_per_node = 2;
      auto scheme = make_scheme(name, o);
      SimRequest req;
      req.count = std::size_t(n) * 3 * 4096;
      req.topology = Topology::grouped(n, 2, 0, {100 * kGB, 1e-6}, {10 * kGB, 5e-6},
                                       /*nic_per_node=*/true);
      const double simulated = simulate_allreduce(*scheme, req).seconds;
      const double model = modelled(*scheme, req.count * 4, req.topology);
      EXPECT_NEAR(simulated / model, 1.0, 1e-9) << name << " n " << n;
    }
  }
}

// The pipelined double tree: many segments, so its model (each phase paced
// by its busiest port, plus the first segment's climb from the deepest
// leaf, each hop's transfer shared with the parent's other child) must
// hold at every world size. Exact for even n (it was 3% off before the
// climb counted the shared port); odd n get 5%: there rank 0 forwards in
// both trees and waits for them in turn, which the model does not count
// (-1.6% to +3.9% at n = 3 to 33).
TEST(ModelVsSim, PipelinedTreeAtAnyWorldSize) {
  for (int n : {2, 3, 4, 5, 7, 8, 16, 33}) {
    SchemeOptions o;
    o.workers = n;
    o.segment_bytes = std::size_t{1} << 20;
    auto tree = make_scheme("tree", o);
    SimRequest req;
    req.count = std::size_t{16} << 20;  // 64 MiB of f32: 32 segments per half
    req.topology = Topology::grouped(n, 1, 0, {}, {450 * kGB, 5e-6});
    const double model = modelled(*tree, req.count * 4, req.topology);
    const double sim = simulate_allreduce(*tree, req).seconds;
    EXPECT_NEAR(sim / model, 1.0, n % 2 == 0 ? 1e-9 : 0.05) << "n " << n;
  }
}

// The first segment of each phase climbs from the deepest leaf: below the
// root each hop's parent takes its two children's segments at once, on
// one port, so the climb pays two segments' transfer a hop. Over HDR
// InfiniBand (its protocols included) the model is the simulation's time
// to rounding at 8 and 64 ranks, where the simulation took up to 1.32x the
// model that paid one segment a hop. On DGX A100 nodes, where a path
// mixes NVLink and NIC hops, within 5% at 16 and 48 ranks, where the model
// that paid the slowest link's latency at every hop was up to 1.75x the
// simulation.
TEST(ModelVsSim, DoubleTreeClimbsTwoChildrenAHop) {
  const LinkSpec ib = find_link_preset("ib_hdr_200g", "test");
  const LinkSpec nvlink = find_link_preset("a100_nvlink", "test");
  for (const auto& [n, per_node] : {std::pair{8, 1}, std::pair{64, 1}, std::pair{16, 8}, std::pair{48, 8}}) {
    for (std::size_t kib : {64, 1024, 16384}) {
      SchemeOptions o;
      o.workers = n;
      o.ranks_per_node = per_node;
      auto tree = make_scheme("tree", o);
      SimRequest req;
      req.count = (kib << 10) / 4;
      req.topology = Topology::grouped(n, per_node, 0, nvlink, ib);
      const double model = modelled(*tree, req.count * 4, req.topology);
      const double sim = simulate_allreduce(*tree, req).seconds;
      EXPECT_NEAR(sim, model, model * (per_node == 1 ? 1e-9 : 0.05))
          << n << " ranks, " << per_node << " a node, " << kib << " KiB";
    }
  }
}

// The double tree's reduce-scatter and all-gather, pipelined: the model
// counts the busiest port's bytes and the tree's longest path; the
// schedule forwards each stream in block order, so a half-block that waits
// for a far owner holds back those behind it. The simulation lands up to
// 12% above the model for reduce-scatter and 23% for all-gather at 64
// ranks (results/README.md, sim_collectives). Still it must beat what a
// tree that reduces to its root and scatters back would take.
TEST(ModelVsSim, PipelinedTreeBlocksAtAnyWorldSize) {
  for (Collective c : {Collective::reduce_scatter, Collective::all_gather}) {
    for (int n : {2, 3, 4, 5, 8, 16, 33, 64}) {
      SchemeOptions o;
      o.workers = n;
      o.segment_bytes = std::size_t{1} << 20;
      auto tree = make_scheme("tree", o);
      SimRequest req;
      req.collective = c;
      req.count = std::size_t{16} << 20;  // 64 MiB of f32
      req.topology = Topology::grouped(n, 1, 0, {}, {25 * kGB, 5e-6});
      const double model = tree->predicted_time(c, req.count * 4, req.topology);
      const double sim = simulate_allreduce(*tree, req).seconds;
      const double above = c == Collective::reduce_scatter ? 0.15 : 0.25;
      EXPECT_GE(sim / model, 0.9) << collective_name(c) << " n " << n;
      EXPECT_LE(sim / model, 1.0 + above) << collective_name(c) << " n " << n;
      // Reduce to the root, then scatter: the root's port carries S in and
      // (n-1)/n S out, one after the other.
      EXPECT_LT(sim, (1.0 + (n - 1.0) / n) * req.count * 4 / (25 * kGB)) << collective_name(c) << " n " << n;
    }
  }
}

// The pipelined PS overlaps every server's ingress with its egress: 8
// workers and 8 dedicated servers on 25 GB/s NICs move 1 GB in S/B = 40 ms
// plus a chunk (BytePS's result for k = n), where push-then-pull takes
// 80 ms; its model holds at other (n, k) and chunk sizes too.
TEST(ModelVsSim, PipelinedPsOverlapsPushAndPull) {
  const double gigabyte = 1e9;
  for (const auto& [n, k, chunk] : std::vector<std::tuple<int, int, std::size_t>>{
           {8, 8, 1 << 20}, {8, 2, 1 << 20}, {4, 1, 4 << 20}, {16, 4, 256 << 10}}) {
    SchemeOptions o;
    o.workers = n;
    o.servers = k;
    o.segment_bytes = chunk;
    auto pipelined = make_scheme("ps_pipelined", o);
    auto sequential = make_scheme("ps", o);
    SimRequest req;
    req.count = static_cast<std::size_t>(gigabyte / 4);
    req.topology = Topology::grouped(n, 1, k, {}, {25 * kGB, 0});
    const double sim = simulate_allreduce(*pipelined, req).seconds;
    const double model = modelled(*pipelined, req.count * 4, req.topology);
    EXPECT_NEAR(sim / model, 1.0, 0.05) << "n " << n << " k " << k << " sim " << sim;
    const double push_then_pull = simulate_allreduce(*sequential, req).seconds;
    // n/k servers' worth of traffic through each server NIC, once instead of twice.
    EXPECT_NEAR(sim, n * gigabyte / k / (25 * kGB), 0.05 * sim) << "n " << n << " k " << k;
    EXPECT_NEAR(push_then_pull / sim, 2.0, 0.1) << "n " << n << " k " << k;
  }
}

// The hybrid PS's ring of the workers' keys on nodes of 8 GPUs: its steps
// are a chain of hops, 7 of every 8 over NVLink, which the model counts
// hop by hop (charging every step the NIC's latency put it 3x above the
// simulation where latency rules). The chain runs beside the ports'
// bytes, not after them: at 2 MiB on 32 GPUs with two dedicated servers
// the model that added them was 1.37x the simulation (1.16x at 32 KiB).
TEST(ModelVsSim, HybridPsRingPaysEachHopsLatency) {
  for (auto [n, k] : {std::pair{32, 1}, std::pair{256, 1}, std::pair{32, 2}}) {
    SchemeOptions o;
    o.workers = n;
    o.servers = k;
    o.segment_bytes = 1 << 20;
    auto scheme = make_scheme("ps_hybrid", o);
    for (std::size_t bytes : {std::size_t{8}, std::size_t{32} << 10, std::size_t{256} << 10,
                              std::size_t{2} << 20}) {
      SimRequest req;
      req.count = std::max<std::size_t>(bytes / 4, 1);
      req.topology = Topology::grouped(n, 8, scheme->endpoints() - n,
                                       find_link_preset("a100_nvlink", "test"),
                                       find_link_preset("ib_hdr_200g", "test"));
      const double sim = simulate_allreduce(*scheme, req).seconds;
      const double model = modelled(*scheme, req.count * 4, req.topology);
      EXPECT_NEAR(sim / model, 1.0, 0.05) << "n " << n << " k " << k << " bytes " << bytes;
    }
  }
}

// The hybrid PS on nodes of 8 GPUs sharing one NIC: its workers' keys go
// round the ring, which leaves a node through the NIC once, and the model
// counts them so (counted as pushes to and replies from every worker's
// server, they crossed the NIC from every GPU: the model was 5-6x the
// simulation).
TEST(ModelVsSim, HybridPsRingCrossesASharedNicOnceANode) {
  for (int n : {32, 64}) {
    SchemeOptions o;
    o.workers = n;
    o.servers = 1;
    o.segment_bytes = 1 << 20;
    auto scheme = make_scheme("ps_hybrid", o);
    for (std::size_t bytes : {std::size_t{64} << 20, std::size_t{1} << 30}) {
      SimRequest req;
      req.count = bytes / 4;
      req.topology = Topology::grouped(n, 8, scheme->endpoints() - n,
                                       find_link_preset("a100_nvlink", "test"),
                                       find_link_preset("ib_hdr_200g", "test"), /*nic_per_node=*/true);
      const double sim = simulate_allreduce(*scheme, req).seconds;
      const double model = modelled(*scheme, bytes, req.topology);
      EXPECT_NEAR(sim / model, 1.0, 0.15) << "n " << n << " bytes " << bytes;
    }
  }
}

// Every PS variant's model against the simulator on a grid of workers n,
// servers k and sizes, over the HDR InfiniBand preset (its per-message
// cost makes the small sizes latency-bound): within 5%. ps_hybrid within
// 6%: its ring is timed by the ring's own model, which knows that the
// ring pipelines 1 MiB segments (it needed 20% when the model added the
// ring's latencies to the ports' bytes), with (n-k)/n of each NIC for the
// whole round, where the servers' flows leave it more once they are done
// (the model is 5.3% above the simulation at n = 8, k = 4, 1 MiB).
TEST(ModelVsSim, ParameterServersOnAGrid) {
  const LinkSpec link = find_link_preset("ib_hdr_200g", "test");
  for (const std::string name : {"ps", "ps_pipelined", "ps_colocated", "dp_master", "ps_hybrid"}) {
    for (int n : {2, 4, 8, 16}) {
      for (int k : {0, 1, 2, n / 2, n}) {
        if (k == 0 && name != "ps_hybrid") continue;
        for (std::size_t bytes : {std::size_t{1} << 20, std::size_t{32} << 20}) {
          SchemeOptions o;
          o.workers = n;
          o.servers = k;
          o.segment_bytes = 1 << 20;
          auto scheme = make_scheme(name, o);
          SimRequest req;
          req.count = bytes / 4;
          req.topology = Topology::grouped(n, 1, scheme->endpoints() - n, {}, link);
          const double sim = simulate_allreduce(*scheme, req).seconds;
          const double model = modelled(*scheme, bytes, req.topology);
          EXPECT_NEAR(sim / model, 1.0, name == "ps_hybrid" ? 0.06 : 0.05)
              << name << " n " << n << " k " << k << " bytes " << bytes;
        }
      }
    }
  }
}

// More servers than a window holds (ps/push_pull_round.h: 16 messages of
// 256 KiB), in every collective: the windows keep every port busy, so the
// simulation gives the model's time. A broadcast's servers answer all
// their workers at once: they get their shards from the root one after
// another, and with a window of replies the servers served first waited
// on workers whose first servers came late (2.0x the model on 64
// co-located servers).
TEST(ModelVsSim, ParameterServersPastTheirWindowsInEveryCollective) {
  const LinkSpec link{10 * kGB, 1e-6};
  const int n = 64;
  for (const std::string name : {"ps", "ps_pipelined", "ps_colocated"}) {
    for (Collective c : {Collective::all_reduce, Collective::reduce_scatter,
                         Collective::all_gather, Collective::broadcast}) {
      SchemeOptions o;
      o.workers = n;
      o.servers = n;
      o.segment_bytes = std::size_t{1} << 18;
      auto scheme = make_scheme(name, o);
      SimRequest req;
      req.collective = c;
      const std::size_t bytes = static_cast<std::size_t>(n) << 18;  // 256 KiB shards
      req.count = bytes / 4;
      req.topology = Topology::grouped(n, 1, scheme->endpoints() - n, {}, link);
      const double sim = simulate_allreduce(*scheme, req).seconds;
      const double model = scheme->predicted_time(c, bytes, req.topology);
      EXPECT_NEAR(sim / model, 1.0, 0.01) << name << ", " << collective_name(c);
    }
  }
}

// BytePS's hybrid placement (OSDI 2020, Theorem 1): 2 n (n-1) S / ((n^2 +
// k n - 2k) B) for n workers and k dedicated servers, the ring's time at
// k = 0 and S/B at k = n. The simulation reaches it at every k (plus one
// chunk of pipeline fill per worker, n MiB / B here) because the workers'
// share moves as a ring (ps/worker.cpp): with it as 2 (n-1) co-located
// pushes and pulls, a worker's NIC shared fairly among its flows left the
// dedicated servers half idle (65.6 ms against 58.9 at n = 8, k = 2).
TEST(ModelVsSim, HybridPsMeetsTheoremOne) {
  const double gigabyte = 1e9, bandwidth = 25 * kGB;
  for (const auto& [n, ks] : std::vector<std::pair<int, std::vector<int>>>{
           {8, {0, 1, 2, 4, 7, 8}}, {32, {2, 16}}}) {
    for (int k : ks) {
      SchemeOptions o;
      o.workers = n;
      o.servers = k;
      o.segment_bytes = 1 << 20;
      auto hybrid = make_scheme("ps_hybrid", o);
      SimRequest req;
      req.count = static_cast<std::size_t>(gigabyte / 4);
      req.topology = Topology::grouped(n, 1, k, {}, {bandwidth, 0});
      const double sim = simulate_allreduce(*hybrid, req).seconds;
      const double theorem = 2.0 * n * (n - 1) * gigabyte / ((n * n + k * n - 2 * k) * bandwidth);
      const double fill = n * static_cast<double>(o.segment_bytes) / bandwidth;
      EXPECT_LE(sim, (theorem + fill) * (1 + 1e-6)) << "n " << n << " k " << k;
      EXPECT_NEAR(sim / theorem, 1.0, 0.05) << "n " << n << " k " << k << " sim " << sim;
      EXPECT_GE(sim, theorem * 0.999) << "n " << n << " k " << k << ": faster than the optimum";
      EXPECT_NEAR(modelled(*hybrid, req.count * 4, req.topology), sim, 0.01 * sim)
          << "n " << n << " k " << k;
    }
  }
}

// In-network reduction: every GPU sends S to a switch that sums at B_s
// per port and gets the sum back, S / min(B, B_s) plus a chunk, whether
// the switch is the GPUs' own node's (NVLS, through NVLink) or one of its
// own (SHARP, through each GPU's NIC). A switch slower than the GPUs'
// links decides; a faster one leaves it to the links.
TEST(ModelVsSim, InNetworkReductionTakesSOverTheSlowerPort) {
  const double gib = 1 << 30;
  for (const bool in_node : {true, false}) {
    for (const double switch_rate : {275 * kGB, 900 * kGB}) {
      SchemeOptions o;
      o.workers = 8;
      o.ranks_per_node = in_node ? 8 : 1;
      o.segment_bytes = 4 << 20;
      auto scheme = make_scheme("in_network", o);
      ASSERT_TRUE(scheme->reduces_in_network());
      SimRequest req;
      req.count = static_cast<std::size_t>(gib / 4);
      req.topology = Topology::grouped(8, o.ranks_per_node, 8, {450 * kGB, 0}, {50 * kGB, 0});
      req.topology.add_switch(8, 8, {switch_rate, 0}, in_node);
      const double sim = simulate_allreduce(*scheme, req).seconds;
      const double link = in_node ? 450 * kGB : 50 * kGB;
      const double ideal = gib / std::min(link, switch_rate);
      EXPECT_NEAR(sim / ideal, 1.0, 0.05) << "in node " << in_node << " switch " << switch_rate;
      EXPECT_GE(sim, ideal * 0.999);
      EXPECT_NEAR(modelled(*scheme, req.count * 4, req.topology), sim, 0.02 * sim);
    }
  }
}

// In-network reduction at two levels, 4 nodes of 8 GPUs (900 GB/s NVLink,
// 50 GB/s NICs, 48 GB/s SHARP ports: a rail's 4, one per node, as one port
// of 192), 1 GiB in 1 MiB segments. With a node
// switch fast enough to leave the pace to the rail ports, the pipeline
// runs at their rate, as the model says: each GPU's NIC and each rail
// port carry S/G each way, far below the ring's 2 (N-1)/N S. (With 450
// GB/s NVLink, a GPU's port as busy as a rail port, the simulation gives
// the model's time too, now that each hop has its own connection; on one
// connection per pair it ran 7% above.) On one node it is the one-switch
// in_network, message for message.
TEST(ModelVsSim, TwoLevelInNetworkReductionRunsAtItsBusiestPort) {
  const double gib = 1 << 30;
  SchemeOptions o;
  o.workers = 32;
  o.ranks_per_node = 8;
  o.segment_bytes = 1 << 20;
  auto scheme = make_scheme("in_network_hierarchical", o);
  ASSERT_EQ(scheme->endpoints(), 72);
  SimRequest req;
  req.count = static_cast<std::size_t>(gib / 4);
  req.topology = Topology::grouped(32, 8, 40, {900 * kGB, 1e-6}, {50 * kGB, 5e-6});
  req.topology.add_switch(32, 32, {2000 * kGB, 1e-6}, /*in_node=*/true);
  req.topology.add_switch(64, 8, {4 * 48 * kGB, 5e-6}, /*in_node=*/false);
  const SimResult r = simulate_allreduce(*scheme, req);
  const double bound = gib / 8 / (48 * kGB);  // S/G through a rail port, each way
  EXPECT_GE(r.seconds, bound);
  EXPECT_NEAR(r.seconds / bound, 1.0, 0.1);
  EXPECT_NEAR(modelled(*scheme, req.count * 4, req.topology), r.seconds, 0.05 * r.seconds);
  EXPECT_EQ(r.traffic[0].bytes_sent, scheme->expected_traffic(0, req.count, DType::f32).bytes_sent);

  SchemeOptions node = o;
  node.workers = 8;
  auto two_level = make_scheme("in_network_hierarchical", node);
  auto flat = make_scheme("in_network", node);
  SimRequest one;
  one.count = req.count;
  for (Scheme* s : {two_level.get(), flat.get()}) {
    one.topology = Topology::grouped(8, 8, s->endpoints() - 8, {450 * kGB, 1e-6}, {50 * kGB, 5e-6});
    one.topology.add_switch(8, 8, {275 * kGB, 1e-6}, /*in_node=*/true);
    const double t = simulate_allreduce(*s, one).seconds;
    EXPECT_NEAR(t / (gib / (275 * kGB)), 1.0, 0.03);
  }
}

// NCCL's NVLSTree with a node switch fast enough to leave the pace to the
// NICs: on 2 nodes each GPU's NIC carries S/G each way (up its tree and
// down, a root in one tree and a leaf in the other), the simulation runs
// at that rate, and the model says so. From 4 nodes a GPU interior in one
// tree carries 2 S/G each way; the model's pace is that NIC's, and the
// simulation keeps it as the trees deepen (16 nodes: a chunk crosses 4
// levels up and 4 down), since each hop has its own connection and a GPU
// keeps enough chunks under way to cover a chunk's round trip.
TEST(ModelVsSim, TreeAcrossNodesRunsAtItsBusiestNic) {
  const double gib = 1 << 30;
  for (const int nodes : {2, 4, 16}) {
    SchemeOptions o;
    o.workers = 8 * nodes;
    o.ranks_per_node = 8;
    o.segment_bytes = 1 << 20;
    auto scheme = make_scheme("in_network_tree", o);
    ASSERT_EQ(scheme->endpoints(), 2 * o.workers);
    SimRequest req;
    req.count = static_cast<std::size_t>(gib / 4);
    req.topology = Topology::grouped(o.workers, 8, o.workers, {900 * kGB, 1e-6}, {50 * kGB, 5e-6});
    req.topology.add_switch(o.workers, o.workers, {2000 * kGB, 1e-6}, /*in_node=*/true);
    const SimResult r = simulate_allreduce(*scheme, req);
    const double bound = (nodes == 2 ? 1 : 2) * gib / 8 / (50 * kGB);
    const double model = modelled(*scheme, req.count * 4, req.topology);
    EXPECT_GE(r.seconds, bound) << nodes << " nodes";
    EXPECT_NEAR(model / bound, 1.0, 0.05) << nodes << " nodes";
    EXPECT_NEAR(r.seconds / model, 1.0, 0.02) << nodes << " nodes";
    for (int e = 0; e < scheme->endpoints(); ++e) {
      EXPECT_EQ(r.traffic[e].bytes_sent, scheme->expected_traffic(e, req.count, DType::f32).bytes_sent)
          << "endpoint " << e;
    }
  }
}

// An oversubscribed leaf/spine tier: 8 nodes per leaf whose uplink carries
// a quarter of what their NICs send. The ring crosses each uplink with one
// flow and does not notice; halving-doubling's far exchanges and a PS's
// pushes to servers under other leaves share it and slow down 4x at most.
// The model counts each leaf's uplink and downlink bytes as a port's.
TEST(ModelVsSim, AnOversubscribedSpineSlowsWhatCrossesIt) {
  const LinkSpec link = find_link_preset("ib_hdr_200g", "test");
  const std::size_t bytes = std::size_t{16} << 20;
  for (const std::string name : {"ring", "halving_doubling", "recursive_doubling", "ps",
                                 "ps_pipelined", "ps_hybrid"}) {
    for (int n : {16, 32}) {
      double flat = 0, flat_fit = 0;
      for (const double ratio : {1.0, 4.0}) {
        SchemeOptions o;
        o.workers = n;
        o.servers = 8;
        o.segment_bytes = 1 << 20;
        auto scheme = make_scheme(name, o);
        SimRequest req;
        req.count = bytes / 4;
        req.topology = Topology::grouped(n, 1, scheme->endpoints() - n, {}, link);
        req.topology.nodes_per_leaf = 8;
        req.topology.oversubscription = ratio;
        const double sim = simulate_allreduce(*scheme, req).seconds;
        const double fit = sim / modelled(*scheme, bytes, req.topology);
        if (ratio == 1.0) {
          // A non-blocking spine is the flat network: the ring's known
          // latency gap is the widest, under 10%.
          EXPECT_NEAR(fit, 1.0, 0.1) << name << " n " << n;
          flat = sim;
          flat_fit = fit;
          continue;
        }
        // The model follows the spine as closely as it follows the flat
        // network.
        EXPECT_NEAR(fit, flat_fit, 0.05) << name << " n " << n;
        EXPECT_GE(sim, flat * 0.999) << name << " n " << n;
        EXPECT_LE(sim, flat * ratio * 1.001) << name << " n " << n;
        if (name == "ring") {
          EXPECT_NEAR(sim / flat, 1.0, 1e-9) << n;
        }
        if (name == "halving_doubling") {
          // Its far exchanges' bytes take 4x; their per-message costs
          // (Simple's, 19.45 us over InfiniBand) do not.
          EXPECT_GT(sim / flat, 2.4) << n;
        }
      }
    }
  }
}

TEST(ModelVsSim, RingAtAnyWorldSize) {
  for (int n : {3, 5, 7, 64}) {
    SchemeOptions o;
    o.workers = n;
    auto ring = make_scheme("ring", o);
    SimRequest req;
    req.count = std::size_t(n) * 1000;
    req.topology = Topology::grouped(n, 1, 0, {}, {kGB, 3e-6});
    const double model = modelled(*ring, req.count * 4, req.topology);
    EXPECT_NEAR(simulate_allreduce(*ring, req).seconds, model, model * 1e-9) << "n " << n;
  }
}

// Across nodes a ring's hops differ: a chain of its steps crosses a NIC
// once per node it passes and NVLink the other times, and the latencies
// add up along that chain, not the slowest hop's at every step (which put
// 16 GPUs on two DGX A100 nodes at 298 us for 8 bytes against the
// simulator's 52). A message of a float a block is latency but for a few
// nanoseconds, which the simulator overlaps: the two agree to 0.01%, on
// two nodes of 8, three of 4 and a last node of one.
TEST(ModelVsSim, RingAcrossNodesPaysEachHopsLatencyAlongItsChain) {
  const LinkSpec nvlink = find_link_preset("a100_nvlink", "test");
  const LinkSpec ib = find_link_preset("ib_hdr_200g", "test");
  for (const auto& [n, per_node] : {std::pair{16, 8}, std::pair{12, 4}, std::pair{5, 2}}) {
    SchemeOptions o;
    o.workers = n;
    o.ranks_per_node = per_node;
    auto ring = make_scheme("ring", o);
    SimRequest req;
    req.count = static_cast<std::size_t>(n);  // a float a block
    req.topology = Topology::grouped(n, per_node, 0, nvlink, ib);
    const double model = modelled(*ring, req.count * 4, req.topology);
    const double sim = simulate_allreduce(*ring, req).seconds;
    EXPECT_NEAR(sim, model, model * 1e-4) << n << " ranks, " << per_node << " per node";
    // Far below a NIC's latency at every one of the 2 (n-1) steps.
    EXPECT_LT(model, 2 * (n - 1) * ib.delay(4) * 0.75) << n << " ranks";
  }
}

// A sliced ring pays the ring's 2(n-1) latencies once per slice: the model
// sums its slices. One message per block, as the ring's own model assumes;
// the simulator may be faster by up to two latencies per slice after the
// first, because a slice's first blocks go out while the one before it is
// gathered (measured: 15 latencies over 9 slices at every n).
TEST(ModelVsSim, SlicedRingPaysItsLatenciesPerSlice) {
  constexpr double kLatency = 20e-6;
  for (int n : {2, 4, 5, 8}) {
    SchemeOptions o;
    o.workers = n;
    o.segment_bytes = std::size_t{1} << 30;
    o.slice_bytes = std::size_t{8} << 20;
    auto ring = make_scheme("ring", o);
    SimRequest req;
    req.count = (std::size_t{64} << 20) / 4 + 1000;  // 8 slices and a short one
    req.topology = Topology::grouped(n, 1, 0, {}, {25 * kGB, kLatency});
    const double model = modelled(*ring, req.count * 4, req.topology);
    o.slice_bytes = 0;
    const double unsliced = modelled(*make_scheme("ring", o), req.count * 4, req.topology);
    EXPECT_NEAR(model - unsliced, 8 * 2 * (n - 1) * kLatency, 1e-9) << "n " << n;
    const double sim = simulate_allreduce(*ring, req).seconds;
    EXPECT_LE(sim, model * (1 + 1e-9)) << "n " << n;
    EXPECT_GE(sim, model - 2 * 8 * kLatency) << "n " << n;
  }
}

// A ring whose blocks move in segments forwards each segment as it lands:
// its steps overlap one another's latencies. On one kind of link its
// model (rings_time in segments, the all-gather after the reduce-scatter)
// is the simulation's time; before the model knew segments it was 1.62x
// the simulation at 4 MiB in 64 KiB segments. Across nodes of 4 (NVLink
// inside, a NIC between) within 5%.
TEST(ModelVsSim, SegmentedRingOverlapsItsStepsLatencies) {
  for (int per_node : {1, 4}) {
    for (int n : {4, 8}) {
      for (std::size_t mib : {1, 4, 16}) {
        SchemeOptions o;
        o.workers = n;
        o.ranks_per_node = per_node;
        o.segment_bytes = std::size_t{64} << 10;
        auto ring = make_scheme("ring", o);
        SimRequest req;
        req.count = (mib << 20) / 4;
        req.topology = Topology::grouped(n, per_node, 0, {100 * kGB, 0}, {25 * kGB, 20e-6});
        const double model = modelled(*ring, req.count * 4, req.topology);
        const double sim = simulate_allreduce(*ring, req).seconds;
        const double tolerance = per_node == 1 ? 1e-9 : 0.05;
        EXPECT_NEAR(sim, model, model * tolerance) << n << " ranks, " << per_node << " per node, " << mib << " MiB";
      }
    }
  }
}

// ---- a shaped real run against the simulation of the same scenario ----------

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

struct Agreement {
  double real;
  double simulated;
};

Agreement compare(const std::string& name, int workers, std::size_t count,
                  std::size_t segment_bytes = SchemeOptions{}.segment_bytes) {
  SchemeOptions o;
  o.workers = workers;
  o.servers = 1;
  o.segment_bytes = segment_bytes;
  auto scheme = make_scheme(name, o);
  // 50 MB/s links: every message takes milliseconds, so the real run's
  // own costs (a thread waking past its deadline, the reduce kernels) stay
  // a few percent even on a loaded machine.
  const Topology topology =
      Topology::grouped(workers, 1, scheme->endpoints() - workers, {}, {50e6, 50e-6});
  MeasureRequest real;
  real.count = count;
  real.warmup_iters = 1;
  real.iters = 3;
  real.options.shaping = topology;
  const Measurement m = measure(*scheme, real);
  EXPECT_EQ(m.wrong, 0u);
  SimRequest sim;
  sim.count = real.count;
  sim.topology = topology;
  // The fastest iteration: noise from other processes only ever adds time
  // to a shaped run, never removes it.
  return {m.min(), simulate_allreduce(*scheme, sim).seconds};
}

// On a modelled network auto runs, at each size, the candidate (a scheme,
// and for a pipelined one its segment size) whose model is lowest there,
// and takes exactly that candidate's simulated time: on 8 ranks over
// 10 GB/s links with 5 us hops, a latency-bound scheme at 8 bytes and a
// bandwidth-optimal one at 64 MiB.
TEST(Auto, OnAModelledNetworkRunsTheCandidateTheModelFindsFastest) {
  SchemeOptions o;
  o.workers = 8;
  o.ranks_per_node = 4;
  auto chooser = make_scheme("auto", o);
  const auto& candidates = dynamic_cast<const AutoScheme&>(*chooser).candidates();
  EXPECT_EQ(std::count(candidates.begin(), candidates.end(), "ps"), 0) << "needs more endpoints";
  EXPECT_EQ(std::count(candidates.begin(), candidates.end(), "ring"), 1);
  EXPECT_EQ(std::count(candidates.begin(), candidates.end(), "hierarchical"), 1);
  const Topology topology = Topology::grouped(8, 4, 0, {100 * kGB, 1e-6}, {10 * kGB, 5e-6});
  std::vector<std::string> chosen;
  for (std::size_t bytes : {std::size_t{8}, std::size_t{64} << 20}) {
    SimRequest req;
    req.count = bytes / 4;
    req.topology = topology;
    const double t = simulate_allreduce(*chooser, req).seconds;
    std::string fastest;
    double best = 1e300;
    const auto make = [&](const std::string& label) { return make_scheme(label, o); };
    for (const std::string& label : candidates) {
      const double m = make(label)->model_time(bytes, topology);
      if (m < best) {
        best = m;
        fastest = label;
      }
    }
    EXPECT_EQ(chooser->chosen_for(bytes), fastest) << bytes << " bytes";
    EXPECT_DOUBLE_EQ(t, simulate_allreduce(*make(fastest), req).seconds) << fastest;
    EXPECT_DOUBLE_EQ(chooser->model_time(bytes, topology), best);
    chosen.push_back(fastest);
  }
  EXPECT_NE(chosen[0], chosen[1]) << "one scheme fastest at 8 B and at 64 MiB";
}

// The segment size is auto's to pick on a modelled network: on 48 ranks
// over HDR InfiniBand the double tree's pipeline fills in about 2 log2 n
// segments, so at 4 MiB 1 MiB segments leave it mostly filling and small
// ones do not. Auto's pick is a segment size other than the scenario's,
// never slower in the model than any candidate at the scenario's size, and
// simulated clearly faster than its own scheme at that size.
TEST(Auto, PicksTheSegmentSizeTheModelFindsFastest) {
  SchemeOptions o;
  o.workers = 48;
  const Topology topology =
      Topology::grouped(48, 1, 0, {}, find_link_preset("ib_hdr_200g", "test"));
  auto chooser = make_scheme("auto", o);
  const auto& chooser_auto = dynamic_cast<const AutoScheme&>(*chooser);
  const auto labels = chooser_auto.candidates();
  EXPECT_NE(std::find(labels.begin(), labels.end(), "tree@64KiB"), labels.end());
  EXPECT_EQ(std::find(labels.begin(), labels.end(), "halving_doubling@64KiB"), labels.end())
      << "halving-doubling does not pipeline";
  const std::size_t bytes = std::size_t{4} << 20;
  SimRequest req;
  req.count = bytes / 4;
  req.topology = topology;
  const double t = simulate_allreduce(*chooser, req).seconds;
  const std::string label = chooser->chosen_for(bytes);
  ASSERT_NE(label.find('@'), std::string::npos) << label;
  const std::string name = parse_scheme_label(label).name;
  // What it ran (with the protocol the collective took) is modelled no
  // slower than any candidate with any protocol.
  for (const std::string& other : labels) {
    EXPECT_LE(chooser->predicted_time(Collective::all_reduce, bytes, topology),
              make_scheme(other, o)->predicted_time(Collective::all_reduce, bytes, topology) *
                  (1 + 1e-12))
        << other;
  }
  EXPECT_LT(t, 0.8 * simulate_allreduce(*make_scheme(name, o), req).seconds) << label;
}

// Where the ring's model counts its segments (rings_time), auto can tell
// a ring in 64 KiB segments from one in 1 MiB: on 8 ranks over 25 GB/s
// links with 20 us hops, at 4 and 16 MiB, what auto runs is the fastest
// of its candidates in the simulation too. (When the model charged every
// step a whole latency, auto ran halving-doubling there: 17% and 7%
// slower than the ring it now runs.)
TEST(Auto, OnOneKindOfLinkRunsTheSimulatedFastestCandidate) {
  SchemeOptions o;
  o.workers = 8;
  auto chooser = make_scheme("auto", o);
  const auto& candidates = dynamic_cast<const AutoScheme&>(*chooser).candidates();
  const Topology topology = Topology::grouped(8, 1, 0, {}, {25 * kGB, 20e-6});
  for (std::size_t bytes : {std::size_t{4} << 20, std::size_t{16} << 20}) {
    SimRequest req;
    req.count = bytes / 4;
    req.topology = topology;
    const double t = simulate_allreduce(*chooser, req).seconds;
    for (const std::string& label : candidates) {
      EXPECT_LE(t, simulate_allreduce(*make_scheme(label, o), req).seconds * (1 + 1e-9))
          << bytes << " bytes: auto ran " << chooser->chosen_for(bytes) << ", " << label << " is faster";
    }
    EXPECT_EQ(parse_scheme_label(chooser->chosen_for(bytes)).name, "ring") << bytes << " bytes";
  }
}

TEST(ShapedVsSim, RingOnFourRanksWithinTenPercent) {
  if (kSanitized) GTEST_SKIP() << "timings are meaningless under sanitizers";
  const Agreement a = compare("ring", 4, std::size_t{1} << 20);  // 4 MB: 6 steps of 21 ms
  EXPECT_NEAR(a.real, a.simulated, 0.10 * a.simulated) << "real " << a.real;
}

TEST(ShapedVsSim, ParameterServerOnFourWorkersWithinTenPercent) {
  if (kSanitized) GTEST_SKIP() << "timings are meaningless under sanitizers";
  const Agreement a = compare("ps", 4, std::size_t{1} << 18);  // 1 MB: 2 x 4 x 21 ms
  EXPECT_NEAR(a.real, a.simulated, 0.10 * a.simulated) << "real " << a.real;
}

// Pushes and pulls overlap on real threads as in the simulation: 16
// chunks of 64 KiB per worker, about half push-then-pull's time.
TEST(ShapedVsSim, PipelinedParameterServerOnFourWorkersWithinTenPercent) {
  if (kSanitized) GTEST_SKIP() << "timings are meaningless under sanitizers";
  const Agreement a = compare("ps_pipelined", 4, std::size_t{1} << 18, 64 << 10);
  EXPECT_NEAR(a.real, a.simulated, 0.10 * a.simulated) << "real " << a.real;
}

}  // namespace
}  // namespace gradex::sim

namespace gradex::sim {
namespace {

// NCCL's rings across nodes (allreduce/rail_rings.h): each GPU leaves its
// node in exactly one ring and enters it in exactly one, so each NIC of a
// rail-optimised node carries one ring's traffic, also when the last node
// is not full.
TEST(RailRings, EachGpuLeavesAndEntersItsNodeInOneRing) {
  for (const auto& [workers, per_node] : {std::pair{16, 8}, {24, 8}, {20, 8}, {6, 2}}) {
    const Topology nodes = Topology::grouped(workers, per_node, 0, {}, {});
    std::vector<int> leaves(static_cast<std::size_t>(workers), 0);
    std::vector<int> enters(static_cast<std::size_t>(workers), 0);
    for (int c = 0; c < per_node; ++c) {
      const GroupMembers ring = rail_ring(c, workers, per_node);
      const std::vector<int> order = ring.list();
      ASSERT_EQ(order.size(), static_cast<std::size_t>(workers));
      for (std::size_t i = 0; i < order.size(); ++i) {
        EXPECT_EQ(ring.position_of(order[i]), static_cast<int>(i));
      }
      for (std::size_t i = 0; i < order.size(); ++i) {
        const int from = order[i];
        const int to = order[(i + 1) % order.size()];
        if (nodes.same_node(from, to)) continue;
        ++leaves[static_cast<std::size_t>(from)];
        ++enters[static_cast<std::size_t>(to)];
      }
    }
    // A GPU beyond a short last node's size leaves no ring there: its
    // node has fewer GPUs than rings, so some of its GPUs carry several.
    const int full = workers - workers % per_node;
    for (int r = 0; r < full; ++r) {
      EXPECT_EQ(leaves[static_cast<std::size_t>(r)], 1) << workers << " rank " << r;
      EXPECT_EQ(enters[static_cast<std::size_t>(r)], 1) << workers << " rank " << r;
    }
  }
}

// The rings run at once: on nodes with a NIC per GPU the 8 rings' traffic
// crosses 8 NICs together, at 8 times one NIC's bus bandwidth (NCCL's
// 192 GB/s on DGX A100s, calibration/reference_points.json); on nodes that
// share one NIC they take turns on it, as one ring would. A ring driven
// after another, or blocking a rank on one ring's send window while the
// others wait to be forwarded, misses the first by 15% or more.
TEST(RailRings, CrossTheNodesOnEveryNicAtOnce) {
  const double nvlink = 230 * kGB;
  const double nic = 24 * kGB;
  const std::size_t bytes = std::size_t{1} << 30;
  SchemeOptions o;
  o.workers = 16;
  o.ranks_per_node = 8;
  auto scheme = make_scheme("rail_rings", o);
  for (const bool shared_nic : {false, true}) {
    SimRequest req;
    req.count = bytes / 4;
    req.topology = Topology::grouped(16, 8, 0, {nvlink, 0}, {nic, 0}, shared_nic);
    const double seconds = simulate_allreduce(*scheme, req).seconds;
    const double busbw = 2.0 * 15 / 16 * static_cast<double>(bytes) / seconds;
    const double expected = shared_nic ? nic : 8 * nic;
    EXPECT_NEAR(busbw / expected, 1.0, 0.05) << (shared_nic ? "one NIC per node" : "a NIC per GPU");
  }
}

// The rings do not move in step: a ring's chain of hops is paced by its
// NIC hop and its latencies, so on a GPU's NVLink port, which seven rings
// share, each hop mostly finds the others elsewhere. Down the chain a hop
// pays its own transfer; the shared port's load paces the rings only where
// it is the busiest (rings_time). When every hop paid for all seven rings'
// bytes, the model ran up to 1.43x the simulation at 64 MiB on DGX H100s.
TEST(ModelVsSim, RailRingsHopsShareTheirPortsWithoutWaitingTheirTurn) {
  const LinkSpec nvlink = find_link_preset("h100_nvlink", "intra");
  const LinkSpec nic = find_link_preset("ib_ndr_400g", "inter");
  for (int n : {16, 32}) {
    for (std::size_t mib : {64, 1024}) {
      SchemeOptions o;
      o.workers = n;
      o.ranks_per_node = 8;
      o.segment_bytes = std::size_t{1} << 20;
      auto scheme = make_scheme("rail_rings", o);
      SimRequest req;
      req.count = (mib << 20) / 4;
      req.topology = Topology::grouped(n, 8, 0, nvlink, nic);
      const double model = modelled(*scheme, req.count * 4, req.topology);
      const double sim = simulate_allreduce(*scheme, req).seconds;
      EXPECT_NEAR(sim / model, 1.0, 0.1) << n << " ranks, " << mib << " MiB";
    }
  }
}

}  // namespace
}  // namespace gradex::sim
