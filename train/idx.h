// Reading IDX files (the MNIST / Fashion-MNIST container: a magic number
// naming the element type and rank, big-endian dimensions, then the data),
// plain or gzip-compressed as Debian's dataset-fashion-mnist ships them.
// Every file is verified before use: magic, element type, rank, expected
// dimensions and exact payload size, so a truncated or foreign file fails
// with a message naming the file instead of training on garbage.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
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

// What an IDX header says: the dimensions, the header's own length and the
// payload's (the dimensions multiplied out).
struct IdxHeader {
  std::vector<std::uint32_t> dims;
  std::size_t header_bytes = 0;
  std::size_t payload_bytes = 0;
};

// The pieces of a byte stream, in order; each valid during the call.
using ByteSink = std::function<void(std::span<const std::uint8_t>)>;

// Reads a ubyte IDX file (".gz" is decompressed). `expected_rank` is the
// number of dimensions the caller needs; throws DataError on anything else.
IdxArray read_idx_u8(const std::filesystem::path& path, int expected_rank);
// The same, with the payload handed to `sink` as it is read, never held
// whole; the header is checked before any of it, its length at the end.
IdxHeader stream_idx_u8(const std::filesystem::path& path, int expected_rank,
                        const ByteSink& sink);
// The same checks on bytes already in memory; `name` is the file named in
// the error messages.
IdxArray parse_idx_u8(std::span<const std::uint8_t> bytes, const std::string& name,
                      int expected_rank);

// The file's bytes, gunzipped when the name ends in ".gz": whole, or in
// pieces handed to `sink`.
std::vector<std::uint8_t> read_maybe_gzip(const std::filesystem::path& path);
void read_maybe_gzip(const std::filesystem::path& path, const ByteSink& sink);

}  // namespace gradex
