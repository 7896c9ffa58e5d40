// The training layer: IDX loading and its verification, sharding, the MLP's
// gradients, DDP's buckets and hooks, and the central claim: N workers with
// batch b end with the same parameters as one worker with batch N*b, under
// every scheme in the registry. Data sets are tiny (synthetic, a few hundred
// samples) so the suite stays fast under the sanitizers.
#include <gtest/gtest.h>
#include <zlib.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <future>
#include <numeric>
#include <set>

#include "common/peak_memory.h"
#include "schemes/registry.h"
#include "train/dataset.h"
#include "train/idx.h"
#include "train/buffer_pool.h"
#include "train/mlp.h"
#include "train/optimizer.h"
#include "train/param_buffer.h"
#include "train/ps_training.h"
#include "train/profiled_model.h"
#include "train/reducer.h"
#include "train/sample_file.h"
#include "train/trainer.h"
#include "transport/options.h"

#include "tiny_training.h"

namespace gradex {
namespace {

namespace fs = std::filesystem;

// A folder of the running test's own, removed with everything in it when
// the test ends.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            (std::string("gradex_train_") + info->test_suite_name() + "_" + info->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::vector<std::uint8_t> idx_bytes(std::vector<std::uint32_t> dims, std::uint8_t type = 0x08) {
  std::vector<std::uint8_t> b = {0, 0, type, static_cast<std::uint8_t>(dims.size())};
  std::size_t total = 1;
  for (std::uint32_t d : dims) {
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<std::uint8_t>(d >> s));
    total *= d;
  }
  for (std::size_t i = 0; i < total; ++i) b.push_back(static_cast<std::uint8_t>(i % 10));
  return b;
}

void write_file(const fs::path& p, const std::vector<std::uint8_t>& bytes) {
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

void write_gz(const fs::path& p, const std::vector<std::uint8_t>& bytes) {
  gzFile gz = gzopen(p.c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  ASSERT_EQ(gzwrite(gz, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  gzclose(gz);
}

// Expects DataError whose message contains `part` (and the file's name).
void expect_data_error(const fs::path& p, int rank, const std::string& part) {
  try {
    read_idx_u8(p, rank);
    FAIL() << "no error for " << p;
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(p.filename().string()), std::string::npos) << e.what();
  }
}

TEST(Idx, RefusesDimensionsWhoseProductOverflows) {
  // 2^22 * 2^21 * 2^21 wraps around to 0 in 64 bits, so an empty payload
  // once passed the size check with dimensions promising 2^64 bytes.
  const TempDir scratch;
  const fs::path& dir = scratch.path();
  write_file(dir / "wraps", {0, 0, 8, 3, 0, 0x40, 0, 0, 0, 0x20, 0, 0, 0, 0x20, 0, 0});
  expect_data_error(dir / "wraps", 3, "more than 2^64");
}

TEST(Idx, ReadsPlainAndGzip) {
  const TempDir scratch;
  const fs::path& dir = scratch.path();
  write_file(dir / "a-idx3-ubyte", idx_bytes({3, 2, 2}));
  write_gz(dir / "a-idx3-ubyte.gz", idx_bytes({3, 2, 2}));
  for (const char* name : {"a-idx3-ubyte", "a-idx3-ubyte.gz"}) {
    const IdxArray a = read_idx_u8(dir / name, 3);
    EXPECT_EQ(a.dims, (std::vector<std::uint32_t>{3, 2, 2}));
    ASSERT_EQ(a.data.size(), 12u);
    EXPECT_EQ(a.data[11], 1);
  }
}

TEST(Idx, RejectsCorruptFiles) {
  const TempDir scratch;
  const fs::path& dir = scratch.path();
  auto good = idx_bytes({4, 3});
  auto bad_magic = good;
  bad_magic[0] = 0x1f;
  write_file(dir / "magic", bad_magic);
  expect_data_error(dir / "magic", 2, "bad magic");
  write_file(dir / "type", idx_bytes({4, 3}, 0x0D));
  expect_data_error(dir / "type", 2, "element type");
  write_file(dir / "rank", good);
  expect_data_error(dir / "rank", 3, "dimensions, expected 3");
  auto truncated = good;
  truncated.resize(truncated.size() - 1);
  write_file(dir / "short", truncated);
  expect_data_error(dir / "short", 2, "payload is 11 bytes but the dimensions say 12");
  auto extra = good;
  extra.push_back(7);
  write_file(dir / "long", extra);
  expect_data_error(dir / "long", 2, "payload is 13 bytes");
  write_file(dir / "header", {0, 0, 8, 2, 0, 0});
  expect_data_error(dir / "header", 2, "truncated inside the dimension header");
  write_file(dir / "tiny", {0, 0});
  expect_data_error(dir / "tiny", 1, "shorter than");
  expect_data_error(dir / "missing", 1, "does not exist");
  // A gzip stream cut in half.
  write_gz(dir / "cut.gz", idx_bytes({50, 40}));
  auto gz = read_maybe_gzip(dir / "cut.gz");  // sanity: the whole one reads
  EXPECT_EQ(gz.size(), 2000u + 12u);
  std::ifstream in(dir / "cut.gz", std::ios::binary);
  std::vector<std::uint8_t> raw{std::istreambuf_iterator<char>(in), {}};
  raw.resize(raw.size() / 2);
  write_file(dir / "cut2.gz", raw);
  expect_data_error(dir / "cut2.gz", 2, "gzip");
}

TEST(FashionMnist, MismatchedLabelsAreRejected) {
  const TempDir scratch;
  const fs::path& dir = scratch.path();
  write_file(dir / "t10k-images-idx3-ubyte", idx_bytes({5, 28, 28}));
  write_file(dir / "t10k-labels-idx1-ubyte", idx_bytes({4}));
  EXPECT_THROW(load_fashion_mnist(dir, "t10k"), DataError);
  write_file(dir / "t10k-labels-idx1-ubyte", idx_bytes({5}));
  const Dataset d = load_fashion_mnist(dir, "t10k");
  EXPECT_EQ(d.size(), 5u);
  EXPECT_EQ(d.features(), 784);
  EXPECT_THROW(load_fashion_mnist(dir / "nowhere", "t10k"), DataError);
}

// Records written in pieces that split them read back whole, from several
// threads at once; reads past the end are refused.
TEST(SampleFiles, ReadBackWhatWasWrittenFromAnyThread) {
  SampleFile f(7, "test samples");
  std::vector<std::uint8_t> all(7 * 500);
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::uint8_t>(i * 31 % 251);
  for (std::size_t at = 0; at < all.size();) {
    const std::size_t piece = std::min<std::size_t>(all.size() - at, 3 + at % 11);
    f.append(std::span<const std::uint8_t>(all).subspan(at, piece));
    at += piece;
  }
  ASSERT_EQ(f.records(), 500u);
  std::vector<std::future<bool>> readers;
  for (std::size_t t = 0; t < 4; ++t) {
    readers.push_back(std::async(std::launch::async, [&, t] {
      std::vector<std::uint8_t> got(7 * 3);
      for (std::size_t r = t; r + 3 <= 500; r += 4) {
        f.read(r, 3, got);
        if (!std::equal(got.begin(), got.end(), all.begin() + static_cast<std::ptrdiff_t>(7 * r))) return false;
      }
      return true;
    }));
  }
  for (auto& r : readers) EXPECT_TRUE(r.get());
  std::vector<std::uint8_t> one(7);
  EXPECT_THROW(f.read(500, 1, one), InvariantError);
}

// Fashion-MNIST's images are read back from disk as the file has them,
// scaled to [0, 1], whole or a sample at a time, and a head shares them.
TEST(FashionMnist, ImagesAreReadFromDiskAsTheFileHasThem) {
  const TempDir scratch;
  const fs::path& dir = scratch.path();
  const auto images = idx_bytes({3, 28, 28});
  write_gz(dir / "t10k-images-idx3-ubyte.gz", images);
  write_file(dir / "t10k-labels-idx1-ubyte", idx_bytes({3}));
  const Dataset d = load_fashion_mnist(dir, "t10k");
  ASSERT_TRUE(d.images);
  EXPECT_EQ(d.y, (std::vector<int>{0, 1, 2}));
  const Eigen::MatrixXf x = d.samples(0, 3);
  ASSERT_EQ(x.rows(), 784);
  ASSERT_EQ(x.cols(), 3);
  for (Eigen::Index s = 0; s < 3; ++s) {
    for (Eigen::Index f = 0; f < 784; ++f) {
      EXPECT_EQ(x(f, s), static_cast<float>(images[16 + static_cast<std::size_t>(s * 784 + f)]) / 255.0f);
    }
  }
  Eigen::VectorXf one(784);
  d.sample(2, one);
  EXPECT_EQ(one, x.col(2));
  const Dataset two = d.head(2);
  EXPECT_EQ(two.size(), 2u);
  EXPECT_EQ(two.samples(0, 2), x.leftCols(2));
  EXPECT_THROW(two.sample(2, one), InvariantError);
}

TEST(FashionMnist, InstalledTestSplitLoads) {
  if (!fs::exists(kFashionMnistDir)) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed (scripts/setup.sh installs it)";
  }
  const Dataset d = load_fashion_mnist(kFashionMnistDir, "t10k");
  EXPECT_EQ(d.size(), 10000u);
  EXPECT_EQ(d.features(), 784);
  const Eigen::MatrixXf x = d.samples(0, d.size());
  EXPECT_LE(x.maxCoeff(), 1.0f);
  EXPECT_GE(x.minCoeff(), 0.0f);
  std::vector<int> per_class(10, 0);
  for (int y : d.y) ++per_class[static_cast<std::size_t>(y)];
  for (int c : per_class) EXPECT_EQ(c, 1000);  // the test split is balanced
}

TEST(Sharding, ShardsPartitionEachEpochAndReshuffle) {
  const std::size_t n = 103;
  for (int world : {1, 2, 3, 4, 7}) {
    std::set<std::size_t> seen;
    for (int r = 0; r < world; ++r) {
      const auto s = shard_indices(n, r, world, 5, 0);
      EXPECT_EQ(s.size(), n / static_cast<std::size_t>(world));
      for (std::size_t i : s) EXPECT_TRUE(seen.insert(i).second) << "index " << i << " twice";
    }
    EXPECT_EQ(seen.size(), n / world * world);
  }
  EXPECT_NE(shard_indices(n, 0, 2, 5, 0), shard_indices(n, 0, 2, 5, 1));
  EXPECT_EQ(shard_indices(n, 1, 2, 5, 3), shard_indices(n, 1, 2, 5, 3));
}

TEST(Mlp, GradientMatchesFiniteDifferences) {
  const Dataset data = synthetic_dataset(8, 5, 3, 11);
  Mlp mlp({5, 4, 3}, data);
  std::vector<float> p(mlp.param_count()), g(mlp.param_count(), 0.0f);
  mlp.init(p, 3);
  std::vector<std::size_t> batch(8);
  std::iota(batch.begin(), batch.end(), std::size_t{0});
  std::vector<std::size_t> ready;
  mlp.train_step(p, batch, g, 1.0f, [&](std::size_t i) { ready.push_back(i); });
  EXPECT_EQ(ready, (std::vector<std::size_t>{2, 3, 0, 1}));  // last layer first
  std::vector<float> scratch(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) {
    const float h = 1e-2f;
    auto q = p;
    q[i] += h;
    const double up = mlp.train_step(q, batch, scratch, 0.0f, {});
    q[i] -= 2 * h;
    const double down = mlp.train_step(q, batch, scratch, 0.0f, {});
    EXPECT_NEAR(g[i], (up - down) / (2 * h), 2e-3) << mlp.params()[0].name << " element " << i;
  }
}

// Scoring reads the values through passes of whole-unit ranges (ZeRO-3
// hands out one gathered group at a time): any split gives the whole
// vector's figures bit for bit, one pass per chunk; the loss is the one
// training computes, and a pass that leaves out a layer is refused.
TEST(Mlp, EvaluationReadsTheValuesInWholeUnitRangesAPassPerChunk) {
  const Dataset test = synthetic_dataset(2 * Mlp::kEvaluationChunk + 1, 6, 3, 5);
  const Mlp mlp({6, 8, 8, 3}, test);
  std::vector<float> p(mlp.param_count());
  mlp.init(p, 9);
  const Evaluation whole = mlp.evaluate(p, test);
  std::size_t passes = 0;
  const auto per_unit = [&](const ParamRangeVisitor& visit) {
    ++passes;
    for (const ParamUnit& u : mlp.units()) {
      const std::vector<float> gathered(p.begin() + static_cast<std::ptrdiff_t>(u.offset),
                                        p.begin() + static_cast<std::ptrdiff_t>(u.offset + u.count));
      visit(u.offset, gathered);
    }
  };
  const Evaluation split = mlp.evaluate(per_unit, test);
  EXPECT_EQ(split.loss, whole.loss);
  EXPECT_EQ(split.accuracy, whole.accuracy);
  EXPECT_EQ(passes, Mlp::evaluation_passes(test.size()));
  EXPECT_EQ(passes, 3u);
  std::vector<std::size_t> all(test.size());
  std::iota(all.begin(), all.end(), std::size_t{0});
  Mlp trainer({6, 8, 8, 3}, test);
  std::vector<float> scratch(p.size());
  EXPECT_NEAR(whole.loss, trainer.train_step(p, all, scratch, 0.0f, {}), 1e-5);
  const auto skips_the_middle = [&](const ParamRangeVisitor& visit) {
    const std::vector<ParamUnit> u = mlp.units();
    visit(u[0].offset, std::span<const float>(p).subspan(u[0].offset, u[0].count));
    visit(u[2].offset, std::span<const float>(p).subspan(u[2].offset, u[2].count));
  };
  EXPECT_THROW(mlp.evaluate(skips_the_middle, test), InvariantError);
}

// A large parameter buffer leaves the process when freed, the second as
// the first: through malloc, the second would stay in the heap (glibc
// raises its mmap threshold to the first freed block's size, up to
// 32 MiB), and ZeRO-3's freed layers would stay resident.
TEST(ParamBuffers, ALargeBufferFreedLeavesTheProcess) {
  constexpr std::size_t kFloats = std::size_t{4} << 18;  // 4 MiB: a 1024 x 1024 layer
  std::vector<std::unique_ptr<char[]>> after_each;  // allocated above a freed buffer
  for (int round = 0; round < 3; ++round) {
    ParamBuffer b(kFloats, 1.0f);  // written: resident
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % 64, 0u);
    after_each.push_back(std::make_unique<char[]>(200000));
  }
  if (!reset_peak_resident_bytes()) GTEST_SKIP() << "the peak resident size cannot be reset here";
  const std::size_t after = peak_resident_bytes();
  ParamBuffer held(kFloats, 1.0f);
  const std::size_t holding = peak_resident_bytes();
  // The freed buffers are not resident: holding one more adds its size.
  EXPECT_GT(holding, after + kFloats * sizeof(float) * 3 / 4);
}

// Storage given back is handed out again (the smallest that fits), zeroed;
// the pool never keeps more than was live at its most, and releases what
// it keeps on request.
TEST(BufferPools, ReuseWhatWasGivenBackWithinThePeak) {
  BufferPool pool;
  ParamBuffer big = pool.take(1000), small = pool.take(100);
  const float* big_at = big.data();
  const float* small_at = small.data();
  big[3] = 7.0f;
  EXPECT_EQ(pool.peak_live(), 1100u);
  pool.give_back(std::move(big));
  pool.give_back(std::move(small));
  EXPECT_EQ(pool.live(), 0u);
  EXPECT_EQ(pool.kept(), 1100u);
  const ParamBuffer fits_small = pool.take(90);  // the smallest that holds it
  EXPECT_EQ(fits_small.data(), small_at);
  ParamBuffer again = pool.take(1000);
  EXPECT_EQ(again.data(), big_at);
  EXPECT_EQ(again.size(), 1000u);
  EXPECT_EQ(again[3], 0.0f);
  EXPECT_EQ(pool.kept(), 0u);
  // More live than ever: new storage, and the peak rises with it.
  ParamBuffer extra = pool.take(500);
  EXPECT_EQ(pool.peak_live(), 1600u);
  pool.give_back(std::move(again));
  pool.give_back(std::move(extra));
  EXPECT_EQ(pool.kept(), 1500u);
  // Two of 1000 live besides the 100 (one new: the 500 kept is too
  // small), peak 2100: of the two given back, one is released, or the pool
  // would hold 2600.
  ParamBuffer a = pool.take(1000), b = pool.take(1000);
  EXPECT_EQ(pool.peak_live(), 2100u);
  pool.give_back(std::move(a));
  pool.give_back(std::move(b));
  EXPECT_EQ(pool.kept(), 1500u);
  pool.release_kept();
  EXPECT_EQ(pool.kept(), 0u);
}

TEST(Optimizer, AdamAndSgdMinimiseAQuadratic) {
  for (const char* kind : {"sgd", "adam"}) {
    OptimizerConfig c;
    c.kind = kind;
    c.lr = 0.05f;
    auto opt = make_optimizer(c, 3);
    std::vector<float> x = {3, -2, 1}, g(3);
    for (int i = 0; i < 500; ++i) {
      for (int j = 0; j < 3; ++j) g[static_cast<std::size_t>(j)] = 2 * x[static_cast<std::size_t>(j)];
      opt->step(x, g);
    }
    for (float v : x) EXPECT_NEAR(v, 0.0f, 0.05f) << kind;
  }
  OptimizerConfig bad;
  bad.kind = "lion";
  EXPECT_THROW(make_optimizer(bad, 1), ConfigError);
}

// torch 1.13's own assignment of these tensors (element counts 100, 10,
// 50, 5, 30, 70, 1) in reverse order, the first bucket capped at 80 B and
// the rest at 240 B: torch.distributed._compute_bucket_assignment_by_size
// (the function DDP's bucket rebuild calls) returns [[6, 5], [4, 3, 2], [1, 0]].
TEST(Buckets, AsTorchDdpBuildsThem) {
  std::vector<ParamSpan> params;
  std::size_t offset = 0;
  for (std::size_t n : {100, 10, 50, 5, 30, 70, 1}) {
    params.push_back({std::string("p").append(std::to_string(params.size())), offset, n});
    offset += n;
  }
  const auto buckets = make_buckets(params, 240, 80);
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[0].params, (std::vector<std::size_t>{6, 5}));
  EXPECT_EQ(buckets[1].params, (std::vector<std::size_t>{4, 3, 2}));
  EXPECT_EQ(buckets[2].params, (std::vector<std::size_t>{1, 0}));
  // Contiguous ranges of the flat gradient, the last layers' first; a
  // bucket closes past its cap (340 B, 440 B) rather than split a tensor.
  EXPECT_EQ(buckets[0].offset, 195u);
  EXPECT_EQ(buckets[0].count, 71u);
  EXPECT_EQ(buckets[1].offset, 110u);
  EXPECT_EQ(buckets[1].count, 85u);
  EXPECT_EQ(buckets[2].offset, 0u);
  EXPECT_EQ(buckets[2].count, 110u);
  EXPECT_EQ(make_buckets(params, std::size_t{25} << 20, std::size_t{1} << 20).size(), 1u);
  // Each tensor a bucket when every cap is a byte.
  EXPECT_EQ(make_buckets(params, 1, 1).size(), params.size());
}

// An exchange that only reports that it started: proves a bucket is sent as
// soon as its gradients are ready, before the rest are marked.
class SignallingExchange final : public GradientExchange {
 public:
  int workers() const override { return 1; }
  int endpoints() const override { return 1; }
  void allreduce(Comm&, Tensor data, ReduceOp) override {
    std::lock_guard lock(mutex_);
    started_.push_back(data.count);
    if (started_.size() == 1) first_.set_value();
  }
  void serve(Comm&, const ExchangeCall&) override {}
  std::future<void> first() { return first_.get_future(); }
  std::vector<std::size_t> started() {
    std::lock_guard lock(mutex_);
    return started_;
  }

 private:
  std::mutex mutex_;
  std::promise<void> first_;
  std::vector<std::size_t> started_;
};

TEST(Reducer, LaunchesABucketBeforeBackwardEnds) {
  const std::vector<ParamSpan> params = {{"W0", 0, 8}, {"b0", 8, 2}, {"W1", 10, 4}, {"b1", 14, 1}};
  InprocWorld world(1);
  SignallingExchange exchange;
  std::vector<float> grads(15, 1.0f);
  Reducer reducer(world.comm(0), exchange, grads,
                  make_buckets(params, 2 * sizeof(float), 5 * sizeof(float)), params, {});
  ASSERT_EQ(reducer.buckets().size(), 3u);  // {b1, W1}, {b0}, {W0}
  auto first = exchange.first();
  reducer.prepare();
  reducer.mark_ready(3);
  reducer.mark_ready(2);
  // Bucket 0 (W1, b1) must now be on the wire although W0, b0 are not ready;
  // the timeout only bounds a failure, it is not what the test measures.
  ASSERT_EQ(first.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  reducer.mark_ready(1);
  reducer.mark_ready(0);
  reducer.finish();
  EXPECT_EQ(exchange.started(), (std::vector<std::size_t>{5, 2, 8}));
  EXPECT_THROW(reducer.mark_ready(0), InvariantError);  // marked twice in one step
}

// Options valid for every scheme at world size n (as in scheme_test).
SchemeOptions options_for(int n) {
  SchemeOptions o;
  o.workers = n;
  o.segment_bytes = 256;  // several segments even for tiny buckets
  for (int g = 4; g >= 2; --g) {
    if (n % g == 0 && n / g >= 2) {
      o.ranks_per_node = g;
      break;
    }
  }
  o.inter_algorithm = "tree";
  o.servers = n >= 4 ? 2 : 1;
  return o;
}

using testing::max_abs_diff;
using testing::tiny_config;
using testing::tiny_data;

class Equivalence : public ::testing::TestWithParam<std::tuple<std::string, int, std::string>> {};

// N workers x batch b (averaged gradients) == 1 worker x batch N*b: the same
// samples per step, the same mean gradient up to summation order.
TEST_P(Equivalence, NWorkersMatchOneWorkerWithNTimesTheBatch) {
  const auto& [scheme, n, optimizer] = GetParam();
  TrainConfig many = tiny_config(optimizer);
  TrainConfig one = many;
  one.batch = many.batch * n;
  const Dataset empty;
  const TrainResult ref = train_data_parallel("ring", options_for(1), one, tiny_data(), empty);
  const TrainResult got = train_data_parallel(scheme, options_for(n), many, tiny_data(), empty);
  ASSERT_EQ(got.params.size(), ref.params.size());
  EXPECT_EQ(got.steps, ref.steps);
  EXPECT_GT(got.buckets, 1u);
  EXPECT_TRUE(got.replicas_agree);
  EXPECT_LT(max_abs_diff(got.params, ref.params), 1e-4) << scheme << " n=" << n;
}

// The tolerance above is meaningful: one worker with the small batch (other
// samples, a noisier gradient) ends far outside it.
TEST(Training, EquivalenceToleranceSeparatesDifferentRuns) {
  const Dataset empty;
  TrainConfig big = tiny_config("sgd");
  big.batch *= 4;
  const TrainResult a = train_data_parallel("ring", options_for(1), big, tiny_data(), empty);
  const TrainResult b =
      train_data_parallel("ring", options_for(1), tiny_config("sgd"), tiny_data(), empty);
  EXPECT_GT(max_abs_diff(a.params, b.params), 1e-2);
}

std::vector<std::tuple<std::string, int, std::string>> equivalence_cases() {
  std::vector<std::tuple<std::string, int, std::string>> cases;
  for (const std::string& name : portable_scheme_names()) {
    for (int n : {2, 3, 4}) cases.emplace_back(name, n, "sgd");
    cases.emplace_back(name, 4, "adam");
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllSchemes, Equivalence, ::testing::ValuesIn(equivalence_cases()),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_n" +
                                  std::to_string(std::get<1>(info.param)) + "_" +
                                  std::get<2>(info.param);
                         });

TEST(Training, AccumulationOverKMicroBatchesMatchesOneLargeBatch) {
  TrainConfig k = tiny_config("sgd");
  k.accumulate = 3;
  TrainConfig one = tiny_config("sgd");
  one.batch = k.batch * 2 * 3;
  const Dataset empty;
  const TrainResult ref = train_data_parallel("ring", options_for(1), one, tiny_data(), empty);
  const TrainResult got = train_data_parallel("ring", options_for(2), k, tiny_data(), empty);
  EXPECT_LT(max_abs_diff(got.params, ref.params), 1e-4);
}

TEST(Training, OverlapOffAndCompressionKeepReplicasInStep) {
  const Dataset empty;
  TrainConfig base = tiny_config("sgd");
  const TrainResult ref = train_data_parallel("ring", options_for(3), base, tiny_data(), empty);
  TrainConfig off = base;
  off.overlap = false;
  const TrainResult no_overlap = train_data_parallel("ring", options_for(3), off, tiny_data(), empty);
  EXPECT_EQ(no_overlap.params, ref.params);  // overlap changes timing, never results
  for (Compression c : {Compression::fp16, Compression::bf16}) {
    TrainConfig cc = base;
    cc.compression = c;
    const TrainResult r = train_data_parallel("tree", options_for(3), cc, tiny_data(), empty);
    EXPECT_TRUE(r.replicas_agree);
    // 16-bit gradients perturb the result a little, not a lot.
    EXPECT_LT(max_abs_diff(r.params, ref.params), c == Compression::fp16 ? 1e-2 : 5e-2)
        << compression_name(c);
    EXPECT_GT(max_abs_diff(r.params, ref.params), 0.0);
  }
}

// The MLP on `data`, as train_data_parallel's in-process overload builds it.
ModelSource mlp_source(const TrainConfig& c, const Dataset& data) {
  ModelSource source;
  source.make_model = [&data, layers = c.layers] { return std::make_unique<Mlp>(layers, data); };
  source.samples = data.size();
  return source;
}

// Training runs on the simulator too: the same scheme code on fibers, with
// real payloads, reduces in the same order as threads do, so every scheme
// ends with exactly the parameters of an in-process run.
TEST(Training, OnTheSimulatorMatchesInProcessBitForBit) {
  const TrainConfig c = tiny_config("sgd");
  const ModelSource source = mlp_source(c, tiny_data());
  for (const std::string& scheme : portable_scheme_names()) {
    // auto picks by timing its candidates, on the wall clock in one run and
    // on virtual time in the other: each of its candidates replays here.
    if (scheme == "auto") continue;
    const TrainResult threads = train_data_parallel(scheme, options_for(4), c, source, "inproc", {});
    const TrainResult fibers = train_data_parallel(scheme, options_for(4), c, source, "sim", {});
    EXPECT_TRUE(fibers.replicas_agree) << scheme;
    EXPECT_EQ(fibers.params, threads.params) << scheme;
    EXPECT_GT(fibers.mean.compute, 0.0) << scheme << ": compute is charged to virtual time";
  }
}

// On the simulator's virtual clock a step is the threaded timeline replayed:
// compute as measured, each bucket exchanged over the simulated network
// from the moment backward made it ready. 3 workers, ResNet-50's layers
// with 1% of its gradient (1.02 MB), a ring over 0.1 GB/s links: the
// exchange alone takes 2 (n-1)/n S / B = 13.7 ms of virtual time, and with
// overlap most of it hides under the 8 ms backward pass.
TEST(Training, OnTheSimulatorOverlapHidesExchangesBehindBackward) {
  EmulationConfig emu;
  emu.forward_seconds = 0.004;
  emu.backward_ratio = 2;
  emu.param_scale = 0.01;
  const ModelSource source = testing::emulated_resnet50(emu, 3 * 3);
  TrainConfig c;
  c.batch = 1;
  c.max_steps = 3;
  c.bucket_bytes = 128 << 10;
  c.first_bucket_bytes = c.bucket_bytes;
  c.evaluate = false;
  SchemeOptions ring;
  ring.workers = 3;
  const LinkSpec link{0.1e9, 10e-6};
  const TransportOptions network = testing::shaped_links(3, link);
  const double gradient = static_cast<double>(source.make_model()->param_count()) * 4;
  const double exchange = 2.0 * 2 / 3 * gradient / link.bytes_per_second;
  c.overlap = false;
  const TrainResult off = train_data_parallel("ring", ring, c, source, "sim", network);
  c.overlap = true;
  const TrainResult on = train_data_parallel("ring", ring, c, source, "sim", network);
  // Virtual time cannot beat the network; waiting for a slower peer adds.
  EXPECT_GE(off.mean.comm, exchange);
  EXPECT_LT(off.mean.comm, exchange * 1.5);
  EXPECT_GE(off.mean.exposed, exchange) << "without overlap every exchange is exposed";
  EXPECT_NEAR(off.mean.compute, emu.forward_seconds * 3, 1e-12);
  EXPECT_GE(off.mean.iteration, off.mean.compute + exchange);
  EXPECT_LT(on.mean.exposed, off.mean.exposed - 0.003) << "backward hides some of it";
  EXPECT_GE(on.mean.iteration, on.mean.compute);
  EXPECT_FALSE(on.payloads) << "an emulated model on the simulator carries sizes only";
}

// On the simulator an emulated model's ranks carry sizes only: no buffers,
// so a ResNet-50 step (102 MB of gradient) on 64 ranks takes a few MB, and every
// rank still sends exactly what the scheme declares. The replicas are not
// compared (there are none); the same run in threads has values.
TEST(Training, AnEmulatedModelOnTheSimulatorCarriesSizesOnly) {
  EmulationConfig emu;
  emu.forward_seconds = 0.015;
  constexpr int n = 64;
  const ModelSource source = testing::emulated_resnet50(emu, n);
  TrainConfig c;
  c.batch = 1;
  c.max_steps = 1;
  c.evaluate = false;
  const LinkSpec link{25e9, 5e-6};
  for (const char* scheme : {"ring", "ps"}) {
    SchemeOptions o = options_for(n);
    // The default segment: at the test options' 64 KiB the simulated ring
    // takes minutes here (the engine's cost grows faster than the messages).
    o.segment_bytes = SchemeOptions{}.segment_bytes;
    TransportOptions network;
    network.shaping = Topology::grouped(n, 1, make_scheme(scheme, o)->endpoints() - n, link, link);
    const TrainResult r = train_data_parallel(scheme, o, c, source, "sim", network);
    EXPECT_FALSE(r.payloads) << scheme;
    EXPECT_TRUE(r.params.empty()) << scheme;
    ASSERT_TRUE(r.wire && r.declared) << scheme;
    EXPECT_GT(r.wire->sent, 0) << scheme;
    EXPECT_DOUBLE_EQ(r.wire->sent, r.declared->sent) << scheme;
    EXPECT_GT(r.mean.comm, 0) << scheme;
  }
  EmulationConfig tiny = emu;
  tiny.param_scale = 0.001;
  const TrainResult threads = train_data_parallel("ring", options_for(2), c,
                                                  testing::emulated_resnet50(tiny, 2), "inproc", {});
  EXPECT_TRUE(threads.payloads);
  EXPECT_TRUE(threads.replicas_agree);
}

// An emulated model's compute is charged on the virtual clock exactly as
// declared (forward plus backward_ratio times forward per micro-batch),
// none of the host's time: the same simulated run twice is the same run.
// On a wall clock the same compute is slept, so it takes at least as long.
TEST(Training, EmulatedComputeIsChargedExactlyOnTheSimulatorAndSleptOnAWallClock) {
  EmulationConfig emu;
  emu.forward_seconds = 0.003;
  emu.backward_ratio = 2;
  emu.param_scale = 0.002;
  const ModelSource source = testing::emulated_resnet50(emu, 3 * 2 * 2);
  TrainConfig c;
  c.batch = 1;
  c.accumulate = 2;
  c.max_steps = 2;
  c.evaluate = false;
  const TransportOptions network = testing::shaped_links(3, {0.1e9, 10e-6});
  const double declared = c.accumulate * emu.forward_seconds * (1 + emu.backward_ratio);
  const TrainResult a = train_data_parallel("ring", options_for(3), c, source, "sim", network);
  const TrainResult b = train_data_parallel("ring", options_for(3), c, source, "sim", network);
  EXPECT_NEAR(a.mean.compute, declared, 1e-12);
  EXPECT_EQ(a.mean.iteration, b.mean.iteration);
  EXPECT_EQ(a.mean.comm, b.mean.comm);
  EXPECT_EQ(a.mean.exposed, b.mean.exposed);
  const TrainResult wall = train_data_parallel("ring", options_for(3), c, source, "inproc", {});
  EXPECT_GE(wall.mean.compute, declared);
  EXPECT_TRUE(wall.replicas_agree);
}

TEST(Training, LearnsTheSyntheticTask) {
  const Dataset train = synthetic_dataset(400, 12, 4, 21);
  const Dataset test = synthetic_dataset(200, 12, 4, 21).head(200);
  TrainConfig c = tiny_config("adam");
  c.max_steps = -1;
  c.epochs = 3;
  c.evaluate = true;
  Trace trace;
  c.trace_steps = 2;
  const TrainResult r = train_data_parallel("ps", options_for(2), c, train, test, {}, &trace);
  ASSERT_EQ(r.epochs.size(), 3u);
  EXPECT_LT(r.epochs.back().train_loss.value(), r.epochs.front().train_loss.value());
  EXPECT_GT(r.epochs.back().test_accuracy.value(), 0.9);
  // The timeline has compute spans and one span per bucket per traced step.
  std::size_t compute = 0, comm = 0;
  for (const auto& e : trace.events()) (e.track == 0 ? compute : comm)++;
  EXPECT_EQ(comm, 2 * 2 * r.buckets);
  EXPECT_EQ(compute, 2u * 2 * 3);  // forward, backward, optimizer: 2 steps, 2 workers
}

}  // namespace
}  // namespace gradex

namespace gradex {
namespace {

// The PS servers run the optimizer; under BSP they step once per round on
// the average, which is exactly what DDP's workers do locally.
TEST(PsTraining, BspMatchesAllReduceTraining) {
  const Dataset empty;
  for (const char* opt : {"sgd", "adam"}) {
    const TrainConfig c = tiny_config(opt);
    const TrainResult ddp = train_data_parallel("ring", options_for(3), c, tiny_data(), empty);
    PsTrainConfig ps;
    ps.servers = 2;
    const PsTrainResult r = train_parameter_server(ps, c, 3, tiny_data(), empty);
    EXPECT_LT(max_abs_diff(r.train.params, ddp.params), 1e-4) << opt;
    EXPECT_EQ(r.staleness.max, 0);
  }
}

// The servers run against Comm alone: the same BSP training on every
// transport, threads, loopback processes' endpoints and the simulator,
// ends with the same bits (a BSP server sums the pushes in rank order).
TEST(PsTraining, BspEndsBitIdenticalOnEveryTransport) {
  const TrainConfig c = tiny_config("sgd");
  ModelSource source;
  source.make_model = [&] { return std::make_unique<Mlp>(c.layers, tiny_data()); };
  source.samples = tiny_data().size();
  PsTrainConfig ps;
  ps.servers = 2;
  const PsTrainResult ref = train_parameter_server(ps, c, 3, source, "inproc");
  for (std::string_view name : kTransportNames) {
    const std::string transport(name);
    const PsTrainResult r = train_parameter_server(ps, c, 3, source, transport);
    EXPECT_EQ(r.train.params, ref.train.params) << transport;
    // Each of 2 servers took a push from 3 workers in 2 epochs of 4 steps.
    EXPECT_EQ(r.staleness.count, 2 * 3 * 2 * 4) << transport;
    EXPECT_EQ(r.staleness.max, 0) << transport;
  }
}

// On the simulator the straggler's 5 ms are virtual and the other workers'
// steps take microseconds: under ASP they run ahead and the straggler's
// gradients arrive many updates stale; SSP holds everyone within its bound.
TEST(PsTraining, OnTheSimulatorAStragglerMakesAspStaleAndSspBoundsIt) {
  TrainConfig c = tiny_config("sgd");
  c.max_steps = 12;
  c.epochs = 1;
  ModelSource source;
  source.make_model = [&] { return std::make_unique<Mlp>(c.layers, tiny_data()); };
  source.samples = tiny_data().size();
  const int workers = 3;
  c.straggler_ms = 5;
  PsTrainConfig ps;
  ps.consistency = Consistency::asp;
  const PsTrainResult asp = train_parameter_server(ps, c, workers, source, "sim");
  ps.consistency = Consistency::ssp;
  ps.staleness = 1;
  const PsTrainResult ssp = train_parameter_server(ps, c, workers, source, "sim");
  const long bound = (workers - 1) * (2 * ps.staleness + 1);
  EXPECT_LE(ssp.staleness.max, bound);
  EXPECT_GT(asp.staleness.max, bound);
  // The straggler sets the pace. Under SSP worker 0 starts its 12th step
  // once the straggler pushed its 10th (50 ms); under ASP it does not wait.
  EXPECT_GE(ssp.train.epochs.back().train_seconds, 0.050 - 1e-9);
  EXPECT_LT(asp.train.mean.iteration, ssp.train.mean.iteration);
}

// A straggler delays every synchronous scheme's step by its lateness: on
// the simulator, exactly in virtual time.
TEST(Training, AStragglerDelaysEveryDataParallelStep) {
  TrainConfig c = tiny_config("sgd");
  ModelSource source;
  source.make_model = [&] { return std::make_unique<Mlp>(c.layers, tiny_data()); };
  source.samples = tiny_data().size();
  const TrainResult plain = train_data_parallel("ring", options_for(3), c, source, "sim");
  c.straggler_ms = 4;
  const TrainResult late = train_data_parallel("ring", options_for(3), c, source, "sim");
  EXPECT_LT(plain.mean.iteration, 0.004);
  EXPECT_GE(late.mean.iteration, 0.004);
  EXPECT_EQ(late.params, plain.params);  // late, not different
}

// Staleness is whatever the thread schedule makes it, but its bounds are
// not: SSP with bound s never lets another worker push more than 2s+1
// times between a worker's pull and its next push.
TEST(PsTraining, AsynchronousModelsTrainAndSspBoundsStaleness) {
  const Dataset train = synthetic_dataset(400, 12, 4, 21);
  const Dataset test = synthetic_dataset(200, 12, 4, 21);
  TrainConfig c = tiny_config("sgd");
  c.max_steps = -1;
  c.epochs = 3;
  c.evaluate = true;
  // Plain SGD at a modest rate converges under any interleaving (momentum
  // amplifies stale gradients, which would make the outcome schedule-bound).
  c.optimizer.lr = 0.05f;
  c.optimizer.momentum = 0.0f;
  const int workers = 3;
  for (int s : {0, 1, 3}) {
    PsTrainConfig ps;
    ps.consistency = Consistency::ssp;
    ps.staleness = s;
    const PsTrainResult r = train_parameter_server(ps, c, workers, train, test);
    EXPECT_LE(r.staleness.max, (workers - 1) * (2 * s + 1)) << "s=" << s;
    EXPECT_GT(r.final_test_accuracy.value(), 0.85) << "s=" << s;
  }
  PsTrainConfig asp;
  asp.consistency = Consistency::asp;
  asp.servers = 2;
  const PsTrainResult r = train_parameter_server(asp, c, workers, train, test);
  EXPECT_GT(r.final_test_accuracy.value(), 0.85);
  EXPECT_EQ(r.train.epochs.size(), 3u);
  EXPECT_THROW(parse_consistency("bulk"), ConfigError);
}

}  // namespace
}  // namespace gradex

namespace gradex {
namespace {

TEST(Profiles, ParameterCountsMatchThePublishedModels) {
  // torchvision / Hugging Face parameter counts.
  EXPECT_EQ(model_profile("resnet50").params(), 25557032);
  EXPECT_EQ(model_profile("vgg16").params(), 138357544);
  EXPECT_EQ(model_profile("gpt2_small").params(), 124439808);
  // BERT-base encoder + pooler, without the pre-training heads.
  EXPECT_EQ(model_profile("bert_base").params(), 109482240);
  EXPECT_NEAR(model_profile("resnet50").forward_flops(), 8.18e9, 0.05e9);
  EXPECT_THROW(model_profile("alexnet"), ConfigError);
}

TEST(Profiles, EmulatedModelReportsLayersLastFirstAndTrainsThroughTheLoop) {
  EmulationConfig emu;
  emu.forward_seconds = 0.001;
  emu.param_scale = 1e-4;
  ProfiledModel m(model_profile("bert_base"), emu);
  std::vector<float> p(m.param_count()), g(m.param_count(), 0.0f);
  std::vector<std::size_t> order;
  m.train_step(p, {}, g, 1.0f, [&](std::size_t i) { order.push_back(i); });
  ASSERT_EQ(order.size(), m.params().size());
  for (std::size_t i = 0; i < order.size(); ++i) EXPECT_EQ(order[i], order.size() - 1 - i);

  ModelSource source;
  source.make_model = [&] { return std::make_unique<ProfiledModel>(model_profile("resnet50"), emu); };
  source.samples = 3 * 2 * 4;
  TrainConfig c;
  c.batch = 2;
  c.bucket_bytes = 1000;
  c.first_bucket_bytes = c.bucket_bytes;
  for (bool overlap : {false, true}) {
    c.overlap = overlap;
    const TrainResult r = train_data_parallel("ring", options_for(3), c, source);
    EXPECT_EQ(r.steps, 4);
    EXPECT_GT(r.buckets, 2u);
    EXPECT_TRUE(r.replicas_agree);
    EXPECT_EQ(r.params.size(), source.make_model()->param_count());
  }
}

}  // namespace
}  // namespace gradex
