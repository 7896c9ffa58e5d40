#include "train/dataset.h"

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <random>

#include "common/errors.h"
#include "train/idx.h"

namespace gradex {

Dataset Dataset::head(std::size_t n) const {
  n = std::min(n, size());
  Dataset d;
  if (images) {
    d.images = images;  // the records past n are never read
  } else {
    d.x = x.leftCols(static_cast<Eigen::Index>(n));
  }
  d.y.assign(y.begin(), y.begin() + static_cast<std::ptrdiff_t>(n));
  d.classes = classes;
  return d;
}

namespace {

std::filesystem::path find_file(const std::filesystem::path& dir, const std::string& stem) {
  for (const char* suffix : {"", ".gz"}) {
    const auto p = dir / (stem + suffix);
    if (std::filesystem::exists(p)) return p;
  }
  throw DataError("Fashion-MNIST file " + (dir / stem).string() +
                  "[.gz] not found (install Debian's dataset-fashion-mnist: scripts/setup.sh)");
}

}  // namespace

namespace {

using Bytes = Eigen::Matrix<std::uint8_t, Eigen::Dynamic, Eigen::Dynamic>;

// Records [first, first + count) of `file` as a features x count matrix of
// bytes, into a buffer kept per thread (a step reads a sample at a time and
// allocates nothing once its size is steady).
const Bytes& read_records(const SampleFile& file, std::size_t first, std::size_t count) {
  thread_local Bytes buffer;
  buffer.resize(static_cast<Eigen::Index>(file.record_bytes()), static_cast<Eigen::Index>(count));
  file.read(first, count, {buffer.data(), static_cast<std::size_t>(buffer.size())});
  return buffer;
}

}  // namespace

void Dataset::sample(std::size_t s, Eigen::Ref<Eigen::VectorXf> out) const {
  GRADEX_ENFORCE(s < size(), "sample ", s, " of ", size());
  if (images) {
    out = read_records(*images, s, 1).col(0).cast<float>() / 255.0f;
  } else {
    out = x.col(static_cast<Eigen::Index>(s));
  }
}

Eigen::MatrixXf Dataset::samples(std::size_t first, std::size_t count) const {
  GRADEX_ENFORCE(first + count <= size(), "samples ", first, "+", count, " of ", size());
  if (images) return read_records(*images, first, count).cast<float>() / 255.0f;
  return x.middleCols(static_cast<Eigen::Index>(first), static_cast<Eigen::Index>(count));
}

Dataset load_fashion_mnist(const std::filesystem::path& dir, const std::string& split) {
  const auto images_path = find_file(dir, split + "-images-idx3-ubyte");
  const auto labels_path = find_file(dir, split + "-labels-idx1-ubyte");
  const IdxArray labels = read_idx_u8(labels_path, 1);
  Dataset d;
  d.classes = 10;
  // The IDX payload is sample-major: a record of 28 x 28 bytes per image,
  // streamed to disk as it is decompressed.
  constexpr std::size_t kFeatures = 28 * 28;
  auto images = std::make_shared<SampleFile>(kFeatures, images_path.string());
  const IdxHeader header = stream_idx_u8(images_path, 3, [&](std::span<const std::uint8_t> piece) {
    images->append(piece);
  });
  if (header.dims[0] != labels.dims[0]) {
    throw DataError(images_path.string() + " has " + std::to_string(header.dims[0]) +
                    " images but " + labels_path.string() + " has " +
                    std::to_string(labels.dims[0]) + " labels");
  }
  if (header.dims[1] != 28 || header.dims[2] != 28) {
    throw DataError(images_path.string() + ": images are " + std::to_string(header.dims[1]) +
                    "x" + std::to_string(header.dims[2]) + ", expected 28x28");
  }
  d.images = std::move(images);
  const std::size_t n = header.dims[0];
  d.y.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const int label = labels.data[i];
    if (label >= d.classes) {
      throw DataError(labels_path.string() + ": label " + std::to_string(label) +
                      " of sample " + std::to_string(i) + " is not in [0, 10)");
    }
    d.y[i] = label;
  }
  return d;
}

Dataset synthetic_dataset(std::size_t samples, int features, int classes, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  Eigen::MatrixXf centres(features, classes);
  for (Eigen::Index i = 0; i < centres.size(); ++i) centres.data()[i] = noise(rng);
  Dataset d;
  d.classes = classes;
  d.x.resize(features, static_cast<Eigen::Index>(samples));
  d.y.resize(samples);
  for (std::size_t s = 0; s < samples; ++s) {
    const int c = static_cast<int>(rng() % static_cast<std::uint64_t>(classes));
    d.y[s] = c;
    for (int f = 0; f < features; ++f) {
      d.x(f, static_cast<Eigen::Index>(s)) = centres(f, c) + 0.7f * noise(rng);
    }
  }
  return d;
}

std::vector<std::size_t> shard_indices(std::size_t n, int rank, int world, std::uint64_t seed,
                                       int epoch) {
  std::vector<std::size_t> all(n);
  std::iota(all.begin(), all.end(), std::size_t{0});
  // One generator per epoch, identical on every rank, so the shards
  // partition the epoch's permutation.
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(epoch));
  std::shuffle(all.begin(), all.end(), rng);
  const std::size_t per_rank = n / static_cast<std::size_t>(world);
  std::vector<std::size_t> mine;
  mine.reserve(per_rank);
  for (std::size_t i = 0; i < per_rank; ++i) {
    mine.push_back(all[static_cast<std::size_t>(rank) + i * static_cast<std::size_t>(world)]);
  }
  return mine;
}

}  // namespace gradex
