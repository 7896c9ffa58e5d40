#include "train/idx.h"

#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <iterator>

namespace gradex {

namespace {

std::uint32_t big_endian_u32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) |
         (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
}

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& why) {
  throw DataError("IDX file " + path.string() + ": " + why);
}

}  // namespace

std::vector<std::uint8_t> read_maybe_gzip(const std::filesystem::path& path) {
  if (!std::filesystem::exists(path)) fail(path, "does not exist");
  if (path.extension() != ".gz") {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(path, "cannot be opened");
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  gzFile gz = gzopen(path.c_str(), "rb");
  if (gz == nullptr) fail(path, "cannot be opened");
  std::vector<std::uint8_t> out;
  std::uint8_t chunk[1 << 16];
  for (;;) {
    const int n = gzread(gz, chunk, sizeof chunk);
    if (n < 0) {
      int code = 0;
      const std::string msg = gzerror(gz, &code);
      gzclose(gz);
      fail(path, "gzip error: " + msg);
    }
    if (n == 0) break;
    out.insert(out.end(), chunk, chunk + n);
  }
  // gzread stops quietly at a truncated stream; gzclose reports it.
  if (gzclose(gz) != Z_OK) fail(path, "gzip stream is truncated or corrupt");
  return out;
}

IdxArray read_idx_u8(const std::filesystem::path& path, int expected_rank) {
  return parse_idx_u8(read_maybe_gzip(path), path.string(), expected_rank);
}

IdxArray parse_idx_u8(std::span<const std::uint8_t> bytes, const std::string& name,
                      int expected_rank) {
  const std::filesystem::path path = name;
  if (bytes.size() < 4) fail(path, "shorter than the 4-byte magic number");
  // Magic: two zero bytes, the element type (0x08 = unsigned byte), the rank.
  if (bytes[0] != 0 || bytes[1] != 0) fail(path, "bad magic number (not an IDX file)");
  if (bytes[2] != 0x08) {
    fail(path, "element type 0x" + std::to_string(bytes[2]) + " is not unsigned byte (0x08)");
  }
  const int rank = bytes[3];
  if (rank != expected_rank) {
    fail(path, "has " + std::to_string(rank) + " dimensions, expected " +
                   std::to_string(expected_rank));
  }
  const std::size_t header = 4 + 4 * static_cast<std::size_t>(rank);
  if (bytes.size() < header) fail(path, "truncated inside the dimension header");
  IdxArray out;
  // The product is checked for overflow: dimensions whose product wraps
  // around to the payload size would otherwise pass the size check below
  // and promise callers far more data than there is. A zero dimension
  // makes the array empty whatever the others say.
  std::size_t total = 1;
  bool overflow = false, empty = false;
  for (int i = 0; i < rank; ++i) {
    const std::uint32_t d = big_endian_u32(&bytes[4 + 4 * static_cast<std::size_t>(i)]);
    out.dims.push_back(d);
    overflow = __builtin_mul_overflow(total, std::size_t{d}, &total) || overflow;
    empty = empty || d == 0;
  }
  if (overflow && !empty) fail(path, "dimensions multiply to more than 2^64 bytes");
  if (bytes.size() - header != total) {
    fail(path, "payload is " + std::to_string(bytes.size() - header) +
                   " bytes but the dimensions say " + std::to_string(total));
  }
  out.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end());
  return out;
}

}  // namespace gradex
