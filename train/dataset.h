// A labelled image-classification data set in memory, Fashion-MNIST loading,
// and the data-parallel sampler (DistributedSampler's rule: one seeded
// shuffle shared by every rank, rank r takes positions r, r+N, r+2N, ...,
// reshuffled each epoch).
#pragma once

#include <Eigen/Core>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "train/fashion_mnist.h"

namespace gradex {

struct Dataset {
  // One column per sample (features x samples), pixel values scaled to [0, 1]:
  // the column layout makes a batch a block of columns for Eigen's GEMM.
  Eigen::MatrixXf x;
  std::vector<int> y;  // class of each sample, in [0, classes)
  int classes = 0;

  std::size_t size() const { return y.size(); }
  int features() const { return static_cast<int>(x.rows()); }
  // The first n samples (tests and quick runs).
  Dataset head(std::size_t n) const;
};

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
