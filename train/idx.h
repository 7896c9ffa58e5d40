// Reading IDX files (the MNIST / Fashion-MNIST container: a magic number
// naming the element type and rank, big-endian dimensions, then the data),
// plain or gzip-compressed as Debian's dataset-fashion-mnist ships them.
// Every file is verified before use: magic, element type, rank, expected
// dimensions and exact payload size, so a truncated or foreign file fails
// with a message naming the file instead of training on garbage.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "common/errors.h"

namespace gradex {

// A malformed or unreadable data file.
class DataError : public Error {
 public:
  using Error::Error;
};

struct IdxArray {
  std::vector<std::uint32_t> dims;
  std::vector<std::uint8_t> data;  // row-major, dims multiplied out
};

// Reads a ubyte IDX file (".gz" is decompressed). `expected_rank` is the
// number of dimensions the caller needs; throws DataError on anything else.
IdxArray read_idx_u8(const std::filesystem::path& path, int expected_rank);
// The same checks on bytes already in memory; `name` is the file named in
// the error messages.
IdxArray parse_idx_u8(std::span<const std::uint8_t> bytes, const std::string& name,
                      int expected_rank);

// The whole file's bytes, gunzipped when the name ends in ".gz".
std::vector<std::uint8_t> read_maybe_gzip(const std::filesystem::path& path);

}  // namespace gradex
