// Every registered scheme against the closed-form reference, over world
// sizes, element counts (0, 1, odd, not divisible by n, ~4 MiB), dtypes and
// ops; and its counted link traffic against the traffic it declares.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "common/errors.h"
#include "common/tuned_table.h"
#include "runner/measure.h"
#include "schemes/auto_scheme.h"
#include "schemes/registry.h"
#include "scheme_options.h"

namespace gradex {
namespace {

using testing::options_for;

Measurement run(Scheme& scheme, std::size_t count, DType dtype, ReduceOp op) {
  MeasureRequest req;
  req.count = count;
  req.dtype = dtype;
  req.op = op;
  // No warm-up: nothing is timed. Two iterations show that a scheme's
  // buffers and tags are reused correctly; counts past 64 Ki elements (the
  // ~4 MiB case dominates the suite under the sanitizers) run once.
  req.warmup_iters = 0;
  req.iters = count > (std::size_t{1} << 16) ? 1 : 2;
  req.options = testing::transport_options();
  return measure(scheme, req);
}

Measurement run(const std::string& name, int n, std::size_t count, DType dtype, ReduceOp op) {
  auto scheme = make_scheme(name, options_for(n));
  return run(*scheme, count, dtype, op);
}


// ---- world size x element count, f32 sum ------------------------------------

class SchemeSizes : public ::testing::TestWithParam<std::tuple<std::string, int, std::size_t>> {};

TEST_P(SchemeSizes, MatchesReferenceAndDeclaredTraffic) {
  const auto& [name, n, count_param] = GetParam();
  // count_param == -1 stands for the "n*k + 3" count (not divisible by n).
  const std::size_t count = count_param == static_cast<std::size_t>(-1) ? n * 37 + 3 : count_param;
  // The scheme that ran declares the traffic: auto's is its choice's.
  auto scheme = make_scheme(name, options_for(n));
  const Measurement m = run(*scheme, count, DType::f32, ReduceOp::sum);
  EXPECT_EQ(m.wrong, 0u);
  ASSERT_EQ(static_cast<int>(m.traffic.size()), scheme->endpoints());
  for (int e = 0; e < scheme->endpoints(); ++e) {
    const Traffic want = scheme->expected_traffic(e, count, DType::f32);
    EXPECT_EQ(m.traffic[e].bytes_sent, want.bytes_sent) << "endpoint " << e;
    EXPECT_EQ(m.traffic[e].bytes_received, want.bytes_received) << "endpoint " << e;
    EXPECT_EQ(m.traffic[e].messages_sent, want.messages_sent) << "endpoint " << e;
    EXPECT_EQ(m.traffic[e].messages_received, want.messages_received) << "endpoint " << e;
  }
}

std::string sizes_name(const ::testing::TestParamInfo<SchemeSizes::ParamType>& info) {
  const auto& [name, n, count] = info.param;
  const std::string c = count == static_cast<std::size_t>(-1) ? "nk3" : std::to_string(count);
  return name + "_n" + std::to_string(n) + "_c" + c;
}

INSTANTIATE_TEST_SUITE_P(
    AllSchemes, SchemeSizes,
    ::testing::Combine(::testing::ValuesIn(portable_scheme_names()),
                       ::testing::Values(1, 2, 3, 4, 5, 7, 8, 16),
                       ::testing::Values(std::size_t{0}, std::size_t{1}, std::size_t{7},
                                         std::size_t{1000}, static_cast<std::size_t>(-1),
                                         std::size_t{1} << 20)),
    sizes_name);

// in_network_hierarchical and in_network_tree in many chunks whose pieces
// differ by an element (1,003 f32 in 16-element segments): the GPU that
// carries a piece across the nodes rotates with the chunk, so a rail's
// sub-pieces (or tree halves) change size from chunk to chunk, and every
// switch port must still fit and sum them. 8 and 12 workers in nodes of 2
// and 4: the trees over 2, 3, 4 and 6 nodes; and 17 nodes of 2, where a
// piece is cut in more sub-pieces than it has elements in some chunks.
TEST(InNetworkHierarchical, ManyUnevenChunksAddUp) {
  const std::pair<int, int> shapes[] = {{8, 2}, {8, 4}, {12, 2}, {12, 4}, {34, 2}};
  for (const std::string name : {"in_network_hierarchical", "in_network_tree"}) {
    for (const auto& [workers, per_node] : shapes) {
      SchemeOptions o = options_for(workers);
      o.ranks_per_node = per_node;
      o.segment_bytes = 64;
      auto scheme = make_scheme(name, o);
      for (const ReduceOp op : {ReduceOp::sum, ReduceOp::max}) {
        const Measurement m = run(*scheme, 1003, DType::f32, op);
        EXPECT_EQ(m.wrong, 0u) << name << " " << workers << " " << per_node;
        for (int e = 0; e < scheme->endpoints(); ++e) {
          EXPECT_EQ(m.traffic[e], scheme->expected_traffic(e, 1003, DType::f32))
              << name << " endpoint " << e;
        }
      }
    }
  }
}

// ---- dtype x op at a few shapes ------------------------------------------------

class SchemeTypes
    : public ::testing::TestWithParam<std::tuple<std::string, int, DType, ReduceOp>> {};

TEST_P(SchemeTypes, MatchesReference) {
  const auto& [name, n, dtype, op] = GetParam();
  for (std::size_t count : {std::size_t{1}, std::size_t{1001}, std::size_t{70'003}}) {
    EXPECT_EQ(run(name, n, count, dtype, op).wrong, 0u) << "count " << count;
  }
}

std::string types_name(const ::testing::TestParamInfo<SchemeTypes::ParamType>& info) {
  const auto& [name, n, dtype, op] = info.param;
  return name + "_n" + std::to_string(n) + "_" + std::string(dtype_name(dtype)) + "_" +
         std::string(reduce_op_name(op));
}

INSTANTIATE_TEST_SUITE_P(AllSchemes, SchemeTypes,
                         ::testing::Combine(::testing::ValuesIn(portable_scheme_names()),
                                            ::testing::Values(3, 8),
                                            ::testing::ValuesIn(kAllDTypes),
                                            ::testing::ValuesIn(kAllReduceOps)),
                         types_name);

// ---- the ring in slices ----------------------------------------------------------

// Slices of 1000 bytes (a slice's elements not a multiple of n) over empty,
// single-slice, slice-edge and many-slice buffers, with a shorter last
// slice: the same sums, and the traffic of one reduce-scatter and one
// all-gather per slice.
TEST(SlicedRing, MatchesReferenceAndDeclaredTraffic) {
  for (int n : {1, 2, 3, 5, 8}) {
    for (DType dtype : {DType::f32, DType::f16, DType::f64}) {
      SchemeOptions o = options_for(n);
      o.segment_bytes = 128;  // several segments per block of a slice
      o.slice_bytes = 1000;
      auto ring = make_scheme("ring", o);
      const std::size_t per_slice = 1000 / dtype_size(dtype);
      for (std::size_t count : {std::size_t{0}, std::size_t{1}, per_slice - 1, per_slice,
                                per_slice + 1, 10 * per_slice + 3, std::size_t{100'003}}) {
        MeasureRequest req;
        req.count = count;
        req.dtype = dtype;
        req.op = dtype == DType::f64 ? ReduceOp::max : ReduceOp::sum;
        req.iters = 2;
        const Measurement m = measure(*ring, req);
        const std::string where = "n " + std::to_string(n) + ", " +
                                  std::string(dtype_name(dtype)) + ", count " +
                                  std::to_string(count);
        EXPECT_EQ(m.wrong, 0u) << where;
        for (int e = 0; e < n; ++e) {
          EXPECT_EQ(m.traffic[e], ring->expected_traffic(e, count, dtype)) << where;
        }
      }
    }
  }
}

// Unshaped, auto measures: the first call at a size times every candidate
// and every rank settles on the same one (each rank's sums are checked,
// and a disagreement would mismatch messages and time out). Its trials are
// not counted as traffic: the one call's count is the chosen scheme's.
TEST(Auto, UnshapedItMeasuresOncePerSizeAndAllRanksAgree) {
  auto scheme = make_scheme("auto", options_for(4));
  for (std::size_t count : {std::size_t{16}, std::size_t{1} << 18}) {
    const std::size_t bytes = count * 4;
    EXPECT_EQ(scheme->chosen_for(bytes), "");
    const Measurement m = run(*scheme, count, DType::f32, ReduceOp::sum);
    EXPECT_EQ(m.wrong, 0u);
    const std::string chose = scheme->chosen_for(bytes);
    ASSERT_NE(chose, "") << count;
    auto same = make_scheme(chose, options_for(4));
    for (int e = 0; e < 4; ++e) {
      EXPECT_EQ(m.traffic[e], same->expected_traffic(e, count, DType::f32)) << chose;
    }
    // Decided once: later calls at this size keep the choice.
    EXPECT_EQ(run(*scheme, count, DType::f32, ReduceOp::max).wrong, 0u);
    EXPECT_EQ(scheme->chosen_for(bytes), chose);
  }
}

// Slicing changes how a buffer moves, not how much of it: the same bytes as
// the whole-buffer ring, in more messages once there are several slices.
TEST(SlicedRing, MovesTheSameBytesInMoreMessages) {
  SchemeOptions whole = options_for(4);
  SchemeOptions sliced = whole;
  sliced.slice_bytes = 64 * 1024;
  auto a = make_scheme("ring", whole);
  auto b = make_scheme("ring", sliced);
  const std::size_t count = 1'000'003;
  for (int e = 0; e < 4; ++e) {
    const Traffic ta = a->expected_traffic(e, count, DType::f32);
    const Traffic tb = b->expected_traffic(e, count, DType::f32);
    EXPECT_EQ(ta.bytes_sent, tb.bytes_sent);
    EXPECT_EQ(ta.bytes_received, tb.bytes_received);
    EXPECT_GT(tb.messages_sent, ta.messages_sent);
  }
}

// ---- labels: a segmented scheme at a segment size of its own -------------------

// "tree@64KiB" is the tree cut in 64 KiB segments: the same sums, in the
// messages that segment size makes; a scheme that does not pipeline, a
// size of nothing, or an unknown name is refused, naming the field.
TEST(SchemeLabel, RunsASegmentedSchemeAtTheSegmentItNames) {
  const SchemeLabel parsed = parse_scheme_label("ring@256KiB");
  EXPECT_EQ(parsed.name, "ring");
  EXPECT_EQ(parsed.segment_bytes, std::size_t{256} << 10);
  EXPECT_EQ(parse_scheme_label("ps").segment_bytes, 0u);
  EXPECT_EQ(scheme_label("tree", std::size_t{64} << 10), "tree@64KiB");
  EXPECT_EQ(scheme_label("tree", std::size_t{4} << 20), "tree@4MiB");
  EXPECT_EQ(scheme_label("tree", 1000), "tree@1000B");
  const std::size_t count = std::size_t{1} << 18;  // 1 MiB of f32
  auto cut = make_scheme("tree@16KiB", options_for(4));  // the options' own: 64 KiB
  EXPECT_EQ(cut->options().segment_bytes, std::size_t{16} << 10);
  const Measurement m = run(*cut, count, DType::f32, ReduceOp::sum);
  EXPECT_EQ(m.wrong, 0u);
  auto whole = make_scheme("tree", options_for(4));
  for (int e = 0; e < 4; ++e) {
    EXPECT_EQ(m.traffic[e], cut->expected_traffic(e, count, DType::f32));
    EXPECT_GT(m.traffic[e].messages_sent, whole->expected_traffic(e, count, DType::f32).messages_sent);
  }
  for (const auto& [label, says] : std::vector<std::pair<std::string, std::string>>{
           {"ps@64KiB", "ps does not pipeline in segments"},
           {"tree@0", "a segment is at least 1 byte"},
           {"tree@lots", "lots"},
           {"trie@64KiB", "unknown scheme 'trie'"}}) {
    try {
      make_scheme(label, options_for(4), "/schemes/1");
      ADD_FAILURE() << label;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.field(), "/schemes/1") << label;
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  }
}

// A table from `gradex tune` may name a segment size however it is
// written; auto runs that candidate (and "tree@64KiB" at the options' own
// 64 KiB is plain "tree").
TEST(Auto, ATunedTableMayNameASegmentSize) {
  for (const auto& [named, runs] : std::vector<std::pair<std::string, std::string>>{
           {"tree@256KiB", "tree@256KiB"}, {"tree@262144", "tree@256KiB"}, {"tree@64KiB", "tree"}}) {
    SchemeOptions o = options_for(4);
    auto table = std::make_shared<TunedTable>();
    table->transport = "inproc";
    table->choices = {{4, 4096, named}};
    o.tuned = table;
    auto chooser = make_scheme("auto", o);
    const std::size_t count = std::size_t{1} << 18;
    const Measurement m = run(*chooser, count, DType::f32, ReduceOp::sum);
    EXPECT_EQ(m.wrong, 0u);
    EXPECT_EQ(chooser->chosen_for(count * 4), runs) << named;
    auto same = make_scheme(runs, options_for(4));
    EXPECT_EQ(m.traffic[1], same->expected_traffic(1, count, DType::f32)) << named;
  }
  SchemeOptions o = options_for(4);
  auto table = std::make_shared<TunedTable>();
  table->choices = {{4, 4096, "halving_doubling@64KiB"}};
  o.tuned = table;
  EXPECT_THROW(make_scheme("auto", o), ConfigError) << "halving-doubling does not pipeline";
}

}  // namespace
}  // namespace gradex
