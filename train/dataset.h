// A labelled image-classification data set, Fashion-MNIST loading,
// and the data-parallel sampler (DistributedSampler's rule: one seeded
// shuffle shared by every rank, rank r takes positions r, r+N, r+2N, ...,
// reshuffled each epoch).
#pragma once

#include <Eigen/Core>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "train/fashion_mnist.h"
#include "train/sample_file.h"

namespace gradex {

struct Dataset {
  // The features. Either floats in memory, one column per sample
  // (features x samples: a batch is a block of columns for Eigen's GEMM),
  // or images on disk (train/sample_file.h), a record of bytes (0-255) per
  // sample that stand for the floats pixel / 255.0f in [0, 1], so that a
  // process holds only the batch it reads (Fashion-MNIST's training set
  // took 45 MiB of each process as bytes, 179 as floats). Read them
  // through sample() and samples(), which convert.
  Eigen::MatrixXf x;
  std::shared_ptr<const SampleFile> images;
  std::vector<int> y;  // class of each sample, in [0, classes)
  int classes = 0;

  std::size_t size() const { return y.size(); }
  int features() const {
    return static_cast<int>(images ? images->record_bytes() : static_cast<std::size_t>(x.rows()));
  }
  // Sample s's features, as floats, into `out` (features() long).
  void sample(std::size_t s, Eigen::Ref<Eigen::VectorXf> out) const;
  // Samples [first, first + count) as floats, one column each.
  Eigen::MatrixXf samples(std::size_t first, std::size_t count) const;
  // The first n samples (tests and quick runs).
  Dataset head(std::size_t n) const;
};

// A handle on a data set that its caller keeps alive (owns nothing), for
// interfaces that also take shared ones.
inline std::shared_ptr<const Dataset> borrowed(const Dataset& d) {
  return std::shared_ptr<const Dataset>(std::shared_ptr<const Dataset>(), &d);
}

// Loads the "train" or "t10k" split from `dir` (files "<split>-images-idx3-ubyte[.gz]"
// and "<split>-labels-idx1-ubyte[.gz]"). Throws DataError if a file is
// missing or malformed, or images and labels disagree.
Dataset load_fashion_mnist(const std::filesystem::path& dir, const std::string& split);

// A deterministic, learnable synthetic set (class-dependent Gaussian blobs)
// for tests that must not depend on installed data.
Dataset synthetic_dataset(std::size_t samples, int features, int classes, std::uint64_t seed);

// The sample indices rank `rank` of `world` visits in `epoch`: the seeded
// shuffle of [0, n) for that epoch, then every world-th position from rank.
// All ranks get the same count (the tail that does not divide is dropped),
// so they take the same number of steps.
std::vector<std::size_t> shard_indices(std::size_t n, int rank, int world, std::uint64_t seed,
                                       int epoch);

}  // namespace gradex
