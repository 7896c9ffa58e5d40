#include "train/idx.h"

#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <optional>
#include <algorithm>

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

void read_maybe_gzip(const std::filesystem::path& path, const ByteSink& sink) {
  if (!std::filesystem::exists(path)) fail(path, "does not exist");
  std::uint8_t chunk[1 << 16];
  if (path.extension() != ".gz") {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(path, "cannot be opened");
    while (in) {
      in.read(reinterpret_cast<char*>(chunk), sizeof chunk);
      if (in.bad()) fail(path, "read error");
      if (in.gcount() > 0) sink({chunk, static_cast<std::size_t>(in.gcount())});
    }
    return;
  }
  gzFile gz = gzopen(path.c_str(), "rb");
  if (gz == nullptr) fail(path, "cannot be opened");
  try {
    for (;;) {
      const int n = gzread(gz, chunk, sizeof chunk);
      if (n < 0) {
        int code = 0;
        fail(path, std::string("gzip error: ") + gzerror(gz, &code));
      }
      if (n == 0) break;
      sink({chunk, static_cast<std::size_t>(n)});
    }
  } catch (...) {
    gzclose(gz);
    throw;
  }
  // gzread stops quietly at a truncated stream; gzclose reports it.
  if (gzclose(gz) != Z_OK) fail(path, "gzip stream is truncated or corrupt");
}

std::vector<std::uint8_t> read_maybe_gzip(const std::filesystem::path& path) {
  std::vector<std::uint8_t> out;
  read_maybe_gzip(path, [&](std::span<const std::uint8_t> piece) {
    out.insert(out.end(), piece.begin(), piece.end());
  });
  return out;
}

namespace {

// The magic number's checks, on the first four bytes.
void check_magic(std::span<const std::uint8_t> bytes, const std::filesystem::path& path,
                 int expected_rank) {
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
}

// The header at the start of `bytes` (which may hold more).
IdxHeader parse_header(std::span<const std::uint8_t> bytes, const std::filesystem::path& path,
                       int expected_rank) {
  check_magic(bytes, path, expected_rank);
  IdxHeader h;
  h.header_bytes = 4 + 4 * static_cast<std::size_t>(expected_rank);
  if (bytes.size() < h.header_bytes) fail(path, "truncated inside the dimension header");
  // The product is checked for overflow: dimensions whose product wraps
  // around to the payload size would otherwise pass the size check and
  // promise callers far more data than there is. A zero dimension makes
  // the array empty whatever the others say.
  std::size_t total = 1;
  bool overflow = false, empty = false;
  for (int i = 0; i < expected_rank; ++i) {
    const std::uint32_t d = big_endian_u32(&bytes[4 + 4 * static_cast<std::size_t>(i)]);
    h.dims.push_back(d);
    overflow = __builtin_mul_overflow(total, std::size_t{d}, &total) || overflow;
    empty = empty || d == 0;
  }
  if (overflow && !empty) fail(path, "dimensions multiply to more than 2^64 bytes");
  h.payload_bytes = empty ? 0 : total;
  return h;
}

void check_payload(const IdxHeader& h, std::size_t got, const std::filesystem::path& path) {
  if (got != h.payload_bytes) {
    fail(path, "payload is " + std::to_string(got) + " bytes but the dimensions say " +
                   std::to_string(h.payload_bytes));
  }
}

}  // namespace

IdxHeader stream_idx_u8(const std::filesystem::path& path, int expected_rank,
                        const ByteSink& sink) {
  std::vector<std::uint8_t> head;  // the header's bytes, until they are all in
  std::optional<IdxHeader> header;
  std::size_t payload = 0;  // bytes seen past the header, the sink's and any beyond
  const auto take_payload = [&](std::span<const std::uint8_t> piece) {
    const std::size_t room = header->payload_bytes - std::min(payload, header->payload_bytes);
    if (room > 0) sink(piece.first(std::min(room, piece.size())));
    payload += piece.size();
  };
  read_maybe_gzip(path, [&](std::span<const std::uint8_t> piece) {
    if (header) return take_payload(piece);
    head.insert(head.end(), piece.begin(), piece.end());
    if (head.size() < 4) return;
    check_magic(head, path, expected_rank);  // before streaming anything that is not IDX
    const std::size_t header_bytes = 4 + 4 * static_cast<std::size_t>(expected_rank);
    if (head.size() < header_bytes) return;
    header = parse_header(head, path, expected_rank);
    take_payload(std::span<const std::uint8_t>(head).subspan(header_bytes));
  });
  if (!header) header = parse_header(head, path, expected_rank);  // throws: too short
  check_payload(*header, payload, path);
  return *header;
}

IdxArray read_idx_u8(const std::filesystem::path& path, int expected_rank) {
  IdxArray out;
  out.dims = stream_idx_u8(path, expected_rank, [&](std::span<const std::uint8_t> piece) {
               out.data.insert(out.data.end(), piece.begin(), piece.end());
             }).dims;
  return out;
}

IdxArray parse_idx_u8(std::span<const std::uint8_t> bytes, const std::string& name,
                      int expected_rank) {
  const std::filesystem::path path = name;
  const IdxHeader h = parse_header(bytes, path, expected_rank);
  check_payload(h, bytes.size() - h.header_bytes, path);
  IdxArray out;
  out.dims = h.dims;
  out.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(h.header_bytes), bytes.end());
  return out;
}

}  // namespace gradex
