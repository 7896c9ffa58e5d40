#include "transport/wire/frame.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <sstream>

namespace gradex::wire {

namespace {

template <typename T>
void put(std::byte* at, T value) {
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    at[i] = static_cast<std::byte>((static_cast<std::uint64_t>(value) >> (8 * i)) & 0xff);
  }
}

template <typename T>
T get(const std::byte* at) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    v |= static_cast<std::uint64_t>(std::to_integer<std::uint8_t>(at[i])) << (8 * i);
  }
  return static_cast<T>(v);
}

std::string hex(std::uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

// Magic and version lead every fixed record, so one check covers them all.
std::optional<std::string> check_preamble(const std::byte* at) {
  const auto magic = get<std::uint32_t>(at);
  if (magic != kMagic) {
    return "bad magic " + hex(magic) + " (expected " + hex(kMagic) + "): not a gradex peer";
  }
  const auto version = get<std::uint16_t>(at + 4);
  if (version != kVersion) {
    return "protocol version " + std::to_string(version) + " (this build speaks " +
           std::to_string(kVersion) + ")";
  }
  return std::nullopt;
}

void put_preamble(std::byte* at, std::uint16_t kind) {
  put<std::uint32_t>(at, kMagic);
  put<std::uint16_t>(at + 4, kVersion);
  put<std::uint16_t>(at + 6, kind);
}

}  // namespace

FrameHeader::Bytes FrameHeader::encode() const {
  Bytes b{};
  put_preamble(b.data(), static_cast<std::uint16_t>(kind));
  put<std::uint64_t>(b.data() + 8, tag);
  put<std::uint64_t>(b.data() + 16, length);
  put<std::uint64_t>(b.data() + 24, std::bit_cast<std::uint64_t>(egress_start));
  return b;
}

std::optional<std::string> FrameHeader::decode(const Bytes& b, std::uint64_t max_length,
                                               FrameHeader& out) {
  if (auto bad = check_preamble(b.data())) return bad;
  const auto kind = get<std::uint16_t>(b.data() + 6);
  if (kind > static_cast<std::uint16_t>(FrameKind::bye)) {
    return "unknown frame kind " + std::to_string(kind);
  }
  out.kind = static_cast<FrameKind>(kind);
  out.tag = get<std::uint64_t>(b.data() + 8);
  out.length = get<std::uint64_t>(b.data() + 16);
  out.egress_start = std::bit_cast<double>(get<std::uint64_t>(b.data() + 24));
  const std::uint64_t limit = out.kind == FrameKind::data    ? max_length
                              : out.kind == FrameKind::abort ? kMaxReasonBytes
                                                             : 0;
  if (out.length > limit) {
    return "frame length " + std::to_string(out.length) + " exceeds the limit of " +
           std::to_string(limit) + " bytes";
  }
  return std::nullopt;
}

Hello::Bytes Hello::encode() const {
  Bytes b{};
  put_preamble(b.data(), 0);
  put<std::int32_t>(b.data() + 8, rank);
  put<std::int32_t>(b.data() + 12, size);
  std::memcpy(b.data() + 16, nonce.data(), nonce.size());
  return b;
}

std::optional<std::string> Hello::decode(const Bytes& b, Hello& out) {
  if (auto bad = check_preamble(b.data())) return bad;
  out.rank = get<std::int32_t>(b.data() + 8);
  out.size = get<std::int32_t>(b.data() + 12);
  std::memcpy(out.nonce.data(), b.data() + 16, out.nonce.size());
  return std::nullopt;
}

Challenge::Bytes Challenge::encode() const {
  Bytes b{};
  put_preamble(b.data(), static_cast<std::uint16_t>(status));
  std::memcpy(b.data() + 8, nonce.data(), nonce.size());
  std::memcpy(b.data() + 8 + kNonceBytes, proof.data(), proof.size());
  return b;
}

std::optional<std::string> Challenge::decode(const Bytes& b, Challenge& out) {
  if (auto bad = check_preamble(b.data())) return bad;
  const auto status = get<std::uint16_t>(b.data() + 6);
  if (status > kLastAckStatus) return "unknown admission status " + std::to_string(status);
  out.status = static_cast<AckStatus>(status);
  std::memcpy(out.nonce.data(), b.data() + 8, out.nonce.size());
  std::memcpy(out.proof.data(), b.data() + 8 + kNonceBytes, out.proof.size());
  return std::nullopt;
}

ClientProof::Bytes ClientProof::encode() const {
  Bytes b{};
  put_preamble(b.data(), 0);
  std::memcpy(b.data() + 8, proof.data(), proof.size());
  return b;
}

std::optional<std::string> ClientProof::decode(const Bytes& b, ClientProof& out) {
  if (auto bad = check_preamble(b.data())) return bad;
  std::memcpy(out.proof.data(), b.data() + 8, out.proof.size());
  return std::nullopt;
}

Ack::Bytes Ack::encode() const {
  // The preamble's kind slot carries the status; the rest is reserved.
  Bytes b{};
  put_preamble(b.data(), static_cast<std::uint16_t>(status));
  return b;
}

std::optional<std::string> Ack::decode(const Bytes& b, Ack& out) {
  if (auto bad = check_preamble(b.data())) return bad;
  const auto status = get<std::uint16_t>(b.data() + 6);
  if (status > kLastAckStatus) {
    return "unknown admission status " + std::to_string(status);
  }
  out.status = static_cast<AckStatus>(status);
  return std::nullopt;
}

std::string describe(AckStatus status) {
  switch (status) {
    case AckStatus::admitted: return "admitted";
    case AckStatus::bad_token: return "token mismatch: wrong proof of GRADEX_TOKEN";
    case AckStatus::bad_world: return "world size mismatch";
    case AckStatus::bad_rank: return "rank out of range or already connected";
  }
  return "unknown";
}

}  // namespace gradex::wire
