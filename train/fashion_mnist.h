// Fashion-MNIST, the dataset the MLP trains on: where Debian installs it
// and its shape. Apart from train/dataset.h so that what needs only these
// does not compile Eigen.
#pragma once

#include <filesystem>

namespace gradex {

// Where Debian's dataset-fashion-mnist package installs the IDX files.
inline const std::filesystem::path kFashionMnistDir = "/usr/share/datasets/fashion-mnist";
// Its shape: 28 x 28 pixels, 10 classes.
inline constexpr int kFashionMnistFeatures = 28 * 28;
inline constexpr int kFashionMnistClasses = 10;

}  // namespace gradex
