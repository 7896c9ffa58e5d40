// The parameter server's parts on their own: key-range sharding, server
// placement, the registry presets, layouts the generic scheme test does not
// reach (more servers than workers or elements), and the cost model under
// link shaping: one server's NIC carries every worker's gradient twice.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/errors.h"
#include "common/topology.h"
#include "ps/parameter_server.h"
#include "ps/push_pull_round.h"
#include "ps/server.h"
#include "ps/sharding.h"
#include "ps/worker.h"
#include "runner/measure.h"
#include "schemes/registry.h"
#include "transport/inproc/world.h"
#include "transport/sim/world.h"

namespace gradex {
namespace {

// ---- sharding -----------------------------------------------------------------

TEST(ShardRange, CoversEveryElementExactlyOnce) {
  const std::size_t counts[] = {0, 1, 2, 3, 5, 7, 8, 15, 16, 17, 100, 1000, 1001, 5 * 37 + 3,
                                std::size_t{1} << 20, (std::size_t{1} << 20) + 7};
  const int servers_list[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 31, 64, 100};
  for (std::size_t count : counts) {
    for (int servers : servers_list) {
      SCOPED_TRACE(testing::Message() << "count " << count << ", servers " << servers);
      // Contiguous ranges in order, ending at count: every element once.
      std::size_t next = 0;
      std::size_t smallest = count;
      std::size_t largest = 0;
      for (int k = 0; k < servers; ++k) {
        const KeyRange r = shard_range(count, servers, k);
        EXPECT_EQ(r.offset, next) << "server " << k;
        next = r.offset + r.count;
        smallest = std::min(smallest, r.count);
        largest = std::max(largest, r.count);
      }
      EXPECT_EQ(next, count);
      EXPECT_LE(largest - smallest, 1u) << "ranges must be even";
      if (count <= 2000) {  // and once more, element by element
        std::vector<int> hits(count, 0);
        for (int k = 0; k < servers; ++k) {
          const KeyRange r = shard_range(count, servers, k);
          for (std::size_t i = r.offset; i < r.offset + r.count; ++i) hits[i]++;
        }
        for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(hits[i], 1) << "element " << i;
      }
    }
  }
}

// ---- placement --------------------------------------------------------------------

TEST(ServerLayout, DedicatedServersFollowTheWorkers) {
  const ServerLayout layout(5, 3, ServerPlacement::dedicated);
  EXPECT_EQ(layout.endpoints(), 8);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(layout.host(k), 5 + k);
    EXPECT_EQ(layout.hosted_on(5 + k), std::vector<int>{k});
  }
  for (int w = 0; w < 5; ++w) EXPECT_TRUE(layout.hosted_on(w).empty());
}

TEST(ServerLayout, ColocatedServersSpreadEvenly) {
  EXPECT_EQ(ServerLayout(4, 2, ServerPlacement::colocated).host(1), 2);
  EXPECT_EQ(ServerLayout(8, 4, ServerPlacement::colocated).host(3), 6);
  EXPECT_EQ(ServerLayout(5, 1, ServerPlacement::colocated).host(0), 0);
  for (int workers = 1; workers <= 16; ++workers) {
    for (int servers = 1; servers <= 2 * workers + 1; ++servers) {
      SCOPED_TRACE(testing::Message() << workers << " workers, " << servers << " servers");
      const ServerLayout layout(workers, servers, ServerPlacement::colocated);
      EXPECT_EQ(layout.endpoints(), workers);
      EXPECT_EQ(layout.host(0), 0);
      std::set<int> hosts;
      for (int k = 0; k < servers; ++k) {
        const int h = layout.host(k);
        ASSERT_GE(h, 0);
        ASSERT_LT(h, workers);
        hosts.insert(h);
        const std::vector<int> there = layout.hosted_on(h);
        EXPECT_NE(std::find(there.begin(), there.end(), k), there.end());
      }
      // No worker hosts two servers while another could host one.
      EXPECT_EQ(static_cast<int>(hosts.size()), std::min(servers, workers));
      std::size_t fewest = static_cast<std::size_t>(servers);
      std::size_t most = 0;
      for (int w = 0; w < workers; ++w) {
        fewest = std::min(fewest, layout.hosted_on(w).size());
        most = std::max(most, layout.hosted_on(w).size());
      }
      EXPECT_LE(most - fewest, 1u);
    }
  }
}

// BytePS's split: the workers' servers take x = n (n-k) / (n^2 + k n - 2k)
// of the keys, the dedicated ones the rest; all of it at k = 0, none at k >= n.
TEST(ServerLayout, HybridSplitsKeysAtTheTheoremsOptimum) {
  const ServerLayout none(8, 0, ServerPlacement::hybrid);
  EXPECT_EQ(none.servers(), 8);
  EXPECT_EQ(none.endpoints(), 8);
  EXPECT_DOUBLE_EQ(none.hybrid_share(), 1.0);
  const ServerLayout two(8, 2, ServerPlacement::hybrid);
  EXPECT_EQ(two.servers(), 10);
  EXPECT_EQ(two.dedicated(), 2);
  EXPECT_EQ(two.endpoints(), 10);
  EXPECT_EQ(two.host(3), 3);
  EXPECT_EQ(two.host(9), 9);
  EXPECT_DOUBLE_EQ(two.hybrid_share(), 48.0 / 76.0);
  const std::size_t count = 7600;
  std::size_t covered = 0;
  for (int k = 0; k < two.servers(); ++k) {
    const KeyRange r = two.shard(count, k);
    EXPECT_EQ(r.offset, covered) << "server " << k;  // contiguous, in order
    covered += r.count;
  }
  EXPECT_EQ(covered, count);
  EXPECT_EQ(two.shard(count, 0).count, 600u);   // 4800 keys over 8 workers
  EXPECT_EQ(two.shard(count, 8).count, 1400u);  // 2800 over 2 servers
  EXPECT_DOUBLE_EQ(ServerLayout(4, 4, ServerPlacement::hybrid).hybrid_share(), 0.0);
  EXPECT_DOUBLE_EQ(ServerLayout(4, 9, ServerPlacement::hybrid).hybrid_share(), 0.0);
}

// Pipelining cuts a shard into chunks in order; the last may be short.
TEST(Sharding, ChunksCoverTheShardInOrder) {
  EXPECT_EQ(chunk_count(0, 4), 0u);
  EXPECT_EQ(chunk_count(10, 0), 1u);
  EXPECT_EQ(chunk_count(10, 4), 3u);
  const KeyRange shard{100, 10};
  EXPECT_EQ(chunk_range(shard, 4, 0).offset, 100u);
  EXPECT_EQ(chunk_range(shard, 4, 2).offset, 108u);
  EXPECT_EQ(chunk_range(shard, 4, 2).count, 2u);
  EXPECT_EQ(chunk_range(shard, 0, 0).count, 10u);
}

TEST(ServerLayout, RejectsEmptyRoles) {
  EXPECT_THROW(ServerLayout(0, 1, ServerPlacement::dedicated), ConfigError);
  EXPECT_THROW(ServerLayout(2, 0, ServerPlacement::colocated), ConfigError);
}

// ---- registry presets ------------------------------------------------------------------

const ServerLayout& layout_of(const Scheme& s) {
  return dynamic_cast<const ParameterServerScheme&>(s).layout();
}

// A server keeps its accumulator from round to round (a timed round must
// not allocate), each server its own.
TEST(ServerMemory, KeepsEachServersBufferBetweenRounds) {
  ServerMemory memory(2);
  std::byte* a = memory.accumulator(0, 1 << 20);
  std::byte* b = memory.accumulator(1, 1 << 20);
  EXPECT_NE(a, b);
  EXPECT_EQ(memory.accumulator(0, 1 << 20), a);
  EXPECT_EQ(memory.accumulator(0, 4096), a);  // a smaller shard reuses it
  std::byte* grown = memory.accumulator(0, 2 << 20);
  grown[(2 << 20) - 1] = std::byte{1};  // the whole size is usable
  EXPECT_EQ(memory.accumulator(1, 1 << 20), b);
  EXPECT_THROW(memory.accumulator(2, 16), std::exception);
}

TEST(PsPresets, PinWhatTheirNamesSay) {
  SchemeOptions o;
  o.workers = 5;
  o.servers = 3;
  o.placement = ServerPlacement::colocated;
  auto ps = make_scheme("ps", o);
  EXPECT_EQ(ps->endpoints(), 8);
  EXPECT_EQ(layout_of(*ps).placement(), ServerPlacement::dedicated);

  o.placement = ServerPlacement::dedicated;
  auto colocated = make_scheme("ps_colocated", o);
  EXPECT_EQ(colocated->endpoints(), 5);
  EXPECT_EQ(layout_of(*colocated).servers(), 3);

  auto master = make_scheme("dp_master", o);
  EXPECT_EQ(master->endpoints(), 5);
  EXPECT_EQ(layout_of(*master).servers(), 1);
  EXPECT_EQ(layout_of(*master).host(0), 0);
  // Worker 0 is the master: it takes in and sends out the other 4 gradients.
  const Traffic t = master->expected_traffic(0, 100, DType::f32);
  EXPECT_EQ(t, (Traffic{4 * 400, 4 * 400, 4, 4}));
  EXPECT_EQ(master->expected_traffic(3, 100, DType::f32), (Traffic{400, 400, 1, 1}));
}

TEST(PsTraffic, DedicatedServerCarriesEveryWorkersShard) {
  SchemeOptions o;
  o.workers = 4;
  o.servers = 3;
  const ParameterServerScheme ps(o);
  const std::size_t count = 1000;  // shards of 334, 333, 333
  for (int k = 0; k < 3; ++k) {
    const std::uint64_t shard = shard_range(count, 3, k).count * sizeof(double);
    EXPECT_EQ(ps.expected_traffic(4 + k, count, DType::f64), (Traffic{4 * shard, 4 * shard, 4, 4}));
  }
  // A worker sends and receives its whole gradient, one message per server.
  EXPECT_EQ(ps.expected_traffic(0, count, DType::f64), (Traffic{8000, 8000, 3, 3}));
  // Empty shards move no message.
  EXPECT_EQ(ps.expected_traffic(0, 2, DType::f64), (Traffic{16, 16, 2, 2}));
  EXPECT_EQ(ps.expected_traffic(6, 2, DType::f64), Traffic{});
}

// ---- layouts beyond the generic scheme test ------------------------------------------------

struct Layout {
  int workers;
  int servers;
  ServerPlacement placement;
};

class PsLayouts : public ::testing::TestWithParam<Layout> {};

TEST_P(PsLayouts, MatchReferenceAndDeclaredTraffic) {
  const Layout& l = GetParam();
  SchemeOptions o;
  o.workers = l.workers;
  o.servers = l.servers;
  o.placement = l.placement;
  o.segment_bytes = 64;  // pipelined: 16 i32 per chunk, so 1001 elements take many
  for (const bool pipelined : {false, true}) {
    ParameterServerScheme ps(o, pipelined);
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{1001}}) {
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::min}) {
        SCOPED_TRACE(testing::Message() << "count " << count << ", op " << reduce_op_name(op)
                                        << (pipelined ? ", pipelined" : ""));
        MeasureRequest req;
        req.count = count;
        req.op = op;
        req.dtype = DType::i32;
        req.warmup_iters = 0;
        req.iters = 2;
        const Measurement m = measure(ps, req);
        EXPECT_EQ(m.wrong, 0u);
        for (int e = 0; e < ps.endpoints(); ++e) {
          EXPECT_EQ(m.traffic[e], ps.expected_traffic(e, count, req.dtype)) << "endpoint " << e;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, PsLayouts,
    ::testing::Values(Layout{1, 1, ServerPlacement::dedicated},
                      Layout{1, 3, ServerPlacement::dedicated},
                      Layout{1, 3, ServerPlacement::colocated},
                      Layout{2, 4, ServerPlacement::colocated},
                      Layout{3, 7, ServerPlacement::colocated},
                      Layout{3, 5, ServerPlacement::dedicated},
                      Layout{6, 4, ServerPlacement::colocated},
                      Layout{5, 2, ServerPlacement::dedicated},
                      Layout{1, 0, ServerPlacement::hybrid},
                      Layout{3, 0, ServerPlacement::hybrid},
                      Layout{4, 2, ServerPlacement::hybrid},
                      Layout{3, 5, ServerPlacement::hybrid}),
    [](const ::testing::TestParamInfo<Layout>& info) {
      const Layout& l = info.param;
      return "w" + std::to_string(l.workers) + "_s" + std::to_string(l.servers) +
             (l.placement == ServerPlacement::dedicated   ? "_dedicated"
              : l.placement == ServerPlacement::colocated ? "_colocated"
                                                          : "_hybrid");
    });

// More workers and servers than a round's window (ps/push_pull_round.h),
// here a window of 2 messages: an endpoint posts its pushes, pulls, takes
// and replies two at a time and refills each as its oldest ends, whatever
// it waits for meanwhile. Every collective, whole shards and chunks,
// co-located servers one per worker, several per worker and a few among
// many workers, and dedicated servers (in chunks, paced), on threads and
// in the simulator with real buffers: the values come out right and
// nothing deadlocks.
TEST(PsWindows, EveryCollectiveRightWithAWindowOfTwo) {
  constexpr std::size_t count = 2003;
  for (const Layout& l : {Layout{9, 9, ServerPlacement::colocated},
                          Layout{4, 11, ServerPlacement::colocated},
                          Layout{10, 3, ServerPlacement::colocated},
                          Layout{7, 5, ServerPlacement::dedicated},
                          Layout{11, 11, ServerPlacement::dedicated}}) {
    const ServerLayout layout(l.workers, l.servers, l.placement);
    for (const std::size_t chunk : {std::size_t{0}, std::size_t{16}}) {
      for (Collective c : {Collective::all_reduce, Collective::reduce_scatter,
                           Collective::all_gather, Collective::broadcast}) {
        const PsPattern pattern(c, count, l.workers);
        // Worker w's element i: w * 10000 + i; after the round, what the
        // collective leaves there.
        const auto sent = [](int w, std::size_t i) { return w * 10000 + static_cast<int>(i); };
        const auto want = [&](int w, std::size_t i) {
          switch (c) {
            case Collective::all_reduce: {
              int sum = 0;
              for (int v = 0; v < l.workers; ++v) sum += sent(v, i);
              return sum;
            }
            case Collective::reduce_scatter: {
              const KeyRange own = pattern.pulled(w, KeyRange{0, count});
              if (i < own.offset || i >= own.offset + own.count) return sent(w, i);
              int sum = 0;
              for (int v = 0; v < l.workers; ++v) sum += sent(v, i);
              return sum;
            }
            case Collective::all_gather: {
              for (int v = 0; v < l.workers; ++v) {
                const KeyRange own = pattern.pushed(v, KeyRange{0, count});
                if (i >= own.offset && i < own.offset + own.count) return sent(v, i);
              }
              return -1;
            }
            case Collective::broadcast: return sent(kBroadcastRoot, i);
          }
          return -1;
        };
        // Paced (worker.cpp): pushes at most a chunk per server, here two,
        // pulls four times as many, and each push after its pull where a
        // chunk's pulls fit (5 servers; with 11, each push after its pull
        // deadlocked: every server waited for pushes behind full windows
        // of pulls).
        const std::size_t paced = chunk > 0 && l.placement == ServerPlacement::dedicated
                                      ? static_cast<std::size_t>(l.servers)
                                      : 0;
        for (const bool simulated : {false, true}) {
          SCOPED_TRACE(testing::Message()
                       << l.workers << " workers, " << l.servers << " servers, chunk " << chunk
                       << ", " << collective_name(c) << (simulated ? ", simulated" : ", threads"));
          ServerMemory memory(layout.servers());
          std::vector<std::vector<int>> buffers(static_cast<std::size_t>(layout.endpoints()));
          const auto body = [&](Comm& comm) {
            const int me = comm.rank();
            std::vector<int>& b = buffers[static_cast<std::size_t>(me)];
            b.resize(count);
            for (std::size_t i = 0; i < count; ++i) b[i] = sent(me, i);
            const Tensor data{b.data(), count, DType::i32};
            push_pull_round(comm, layout, pattern, chunk, data, ReduceOp::sum, memory,
                            RoundWindow{2, 0, paced});
          };
          TransportOptions options;
          options.phantom_payloads = false;
          if (simulated) {
            options.shaping = Topology::grouped(layout.endpoints(), 1, 0, {}, LinkSpec{10e9, 1e-6});
            sim::SimWorld(layout.endpoints(), options).run(body);
          } else {
            InprocWorld(layout.endpoints(), options).run(body);
          }
          std::size_t wrong = 0;
          for (int w = 0; w < l.workers; ++w) {
            for (std::size_t i = 0; i < count; ++i) {
              wrong += buffers[static_cast<std::size_t>(w)][i] != want(w, i) ? 1 : 0;
            }
          }
          EXPECT_EQ(wrong, 0u);
        }
      }
    }
  }
}

// ---- the cost model under link shaping ------------------------------------------------------

// One dedicated server, W workers with S bytes each, every NIC B bytes/s
// with latency a: the server's ingress takes W S / B for the pushes, its
// egress as long for the pulls, so one round is 2 (a + W S / B) (docs/architecture.md, Cost model).
TEST(PsShaped, OneServerTimeGrowsWithWorkers) {
  const LinkSpec nic{100e6, 1e-3};
  const std::size_t count = std::size_t{1} << 20;  // 4 MiB of f32
  const double bytes = static_cast<double>(count * sizeof(float));
  std::vector<double> times;
  for (int workers : {2, 4}) {
    SCOPED_TRACE(testing::Message() << workers << " workers");
    SchemeOptions o;
    o.workers = workers;
    o.servers = 1;
    o.placement = ServerPlacement::dedicated;
    ParameterServerScheme ps(o);
    MeasureRequest req;
    req.count = count;
    req.warmup_iters = 1;
    // Five rounds, judged by the fastest: under a sanitiser the server's
    // sums take CPU time the model does not count, and a suite running
    // beside this one can take the CPU for a whole round (three rounds of
    // 4 workers once all came out 3.1x the 2 workers' time).
    req.iters = 5;
    req.options.shaping = Topology::grouped(workers, 1, 1, LinkSpec{}, nic);
    const Measurement m = measure(ps, req);
    EXPECT_EQ(m.wrong, 0u);

    // The fastest round: other processes (a sanitised suite running beside
    // this one) only ever add time to a shaped run, never remove it.
    const double model = 2 * (nic.latency_seconds + workers * bytes / nic.bytes_per_second);
    EXPECT_GT(m.min(), 0.7 * model) << "model " << model << " s";
    EXPECT_LT(m.min(), 1.6 * model) << "model " << model << " s";
    RecordProperty("seconds_w" + std::to_string(workers), std::to_string(m.min()));
    RecordProperty("model_w" + std::to_string(workers), std::to_string(model));
    times.push_back(m.min());

    // The server's ingress took in one whole gradient per worker.
    const Traffic& server = m.traffic[static_cast<std::size_t>(workers)];
    EXPECT_EQ(server.bytes_received, static_cast<std::uint64_t>(workers) * count * sizeof(float));
    EXPECT_EQ(server.messages_received, static_cast<std::uint64_t>(workers));
    EXPECT_EQ(server.bytes_sent, server.bytes_received);
  }
  // Twice the workers, twice the time (model: 1.99x): the server's NIC is
  // the bottleneck. Generous above, for slow (sanitised, shared) machines,
  // and still below the 4x of a server whose time grew as workers squared.
  EXPECT_GT(times[1] / times[0], 1.5);
  EXPECT_LT(times[1] / times[0], 3.5);
}

// Reduce-scatter, all-gather and broadcast through the servers
// (ps/pattern.h): what each endpoint declares is what the pattern moves,
// checked here in closed form for one dedicated server and n workers, S
// bytes. A reduce-scatter pushes S and pulls its block; an all-gather
// pushes its block and pulls S; a broadcast's root pushes S, every other
// worker pulls it. The runs themselves (values, counted traffic equal to
// these) are tests/collective_test.cpp's, as for every scheme.
TEST(PsCollectives, MoveWhatThePatternSays) {
  constexpr int n = 4;
  constexpr std::size_t count = n * 1000;
  constexpr std::uint64_t S = count * 4;
  SchemeOptions o;
  o.workers = n;
  o.servers = 1;
  for (const char* name : {"ps", "ps_pipelined"}) {
    const auto scheme = make_scheme(name, o);
    ASSERT_EQ(scheme->endpoints(), n + 1);
    const auto traffic = [&](Collective c, int e) {
      return scheme->collective_traffic(c, e, count, DType::f32);
    };
    for (int w = 0; w < n; ++w) {
      EXPECT_EQ(traffic(Collective::reduce_scatter, w).bytes_sent, S) << name;
      EXPECT_EQ(traffic(Collective::reduce_scatter, w).bytes_received, S / n) << name;
      EXPECT_EQ(traffic(Collective::all_gather, w).bytes_sent, S / n) << name;
      EXPECT_EQ(traffic(Collective::all_gather, w).bytes_received, S) << name;
      EXPECT_EQ(traffic(Collective::broadcast, w).bytes_sent, w == 0 ? S : 0) << name;
      EXPECT_EQ(traffic(Collective::broadcast, w).bytes_received, w == 0 ? 0 : S) << name;
    }
    const Traffic rs = traffic(Collective::reduce_scatter, n);
    const Traffic ag = traffic(Collective::all_gather, n);
    const Traffic bc = traffic(Collective::broadcast, n);
    EXPECT_EQ(rs.bytes_received, n * S) << name;
    EXPECT_EQ(rs.bytes_sent, S) << name;
    EXPECT_EQ(ag.bytes_received, S) << name;
    EXPECT_EQ(ag.bytes_sent, n * S) << name;
    EXPECT_EQ(bc.bytes_received, S) << name;
    EXPECT_EQ(bc.bytes_sent, (n - 1) * S) << name;
    // The same bytes in more messages when pipelined (1 MiB chunks here
    // are one chunk: the whole shard), and through one port: the server's.
    EXPECT_GT(scheme->collective_model_time(Collective::reduce_scatter, S,
                                            Topology::grouped(n, 1, 1, {1e9, 1e-6}, {1e9, 1e-6})),
              0.0);
  }
  // Hybrid moves its workers' keys round a ring: all-reduce only.
  o.placement = ServerPlacement::hybrid;
  EXPECT_FALSE(make_scheme("ps_hybrid", o)->provides(Collective::reduce_scatter));
}

// An endpoint that posts nothing anywhere and writes down whom each send
// is for, in posting order.
class SendRecorder final : public Comm {
 public:
  SendRecorder(int rank, int size) : rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Clock& clock() override { return clock_; }
  std::chrono::milliseconds timeout() const override { return std::chrono::milliseconds(100); }
  std::vector<int> sent_to;

 protected:
  std::shared_ptr<RequestState> start_send(int peer, const void*, std::size_t, Tag) override {
    sent_to.push_back(peer);
    return std::make_shared<RequestState>();
  }
  std::shared_ptr<RequestState> start_recv(int, void*, std::size_t, Tag) override {
    return std::make_shared<RequestState>();
  }
  void wait_state(RequestState&) override {}
  std::size_t wait_any_state(std::span<RequestState* const>) override { return 0; }

 private:
  int rank_;
  int size_;
  WallClock clock_;
};

// The hybrid's workers start each chunk's pushes at another dedicated
// server, rotated by rank, so that their first chunks spread over the
// servers' NICs (on a shaped link a send is booked when it is posted).
// Every worker started at the first dedicated server before.
TEST(PsWorker, HybridWorkersStartAtDifferentDedicatedServers) {
  const int n = 6, k = 3;
  const ServerLayout layout(n, k, ServerPlacement::hybrid);
  for (int w = 0; w < n; ++w) {
    SendRecorder comm(w, layout.endpoints());
    std::vector<float> data(3000);
    PsWorker worker(comm, layout, /*chunk=*/0, /*first_server=*/n);
    worker.push(Tensor{data.data(), data.size(), DType::f32});
    ASSERT_EQ(comm.sent_to.size(), static_cast<std::size_t>(k)) << "worker " << w;
    std::vector<int> want;
    for (int i = 0; i < k; ++i) want.push_back(layout.host(n + (w + i) % k));
    EXPECT_EQ(comm.sent_to, want) << "worker " << w;
  }
}

}  // namespace
}  // namespace gradex
