// The bytes on a gradex TCP connection: a fixed hello/ack exchange that
// admits a peer, then length-prefixed frames (header + payload).
//
// Everything is encoded little-endian field by field, so the format does not
// depend on struct padding. A header is validated before any payload byte is
// read or any memory is allocated for it: a stray client, a port scanner or
// a peer of another gradex version is turned away with a message saying why.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "transport/wire/auth.h"

namespace gradex::wire {

inline constexpr std::uint32_t kMagic = 0x58444747;  // "GGDX"
// 2: challenge-response admission (auth.h) instead of a token in the hello.
inline constexpr std::uint16_t kVersion = 2;
// An abort frame's payload is a human-readable reason, never larger.
inline constexpr std::size_t kMaxReasonBytes = 4096;

enum class FrameKind : std::uint16_t {
  data = 0,   // tag, then `length` payload bytes of a message
  abort = 1,  // the sender's group failed; tag = the failed rank, payload = reason
  bye = 2,    // orderly close: no more frames follow
};

struct FrameHeader {
  FrameKind kind = FrameKind::data;
  std::uint64_t tag = 0;
  std::uint64_t length = 0;
  // Link shaping across processes: when the message starts leaving the
  // sender's egress port, in seconds of the host's monotonic clock (which
  // every process of one machine shares); 0 when unshaped.
  double egress_start = 0;

  static constexpr std::size_t kBytes = 32;
  using Bytes = std::array<std::byte, kBytes>;
  Bytes encode() const;
  // Returns the reason when the bytes are not a valid header or the length
  // exceeds `max_length` (checked before anything is allocated).
  static std::optional<std::string> decode(const Bytes& bytes, std::uint64_t max_length,
                                           FrameHeader& out);
};

// Admission (auth.h), four fixed records: the connecting side sends a
// Hello, the accepting side a Challenge (or a refusal), the connecting side
// its Proof, the accepting side the final Ack. The token never travels.
struct Hello {
  std::int32_t rank = 0;
  std::int32_t size = 0;
  Nonce nonce{};

  static constexpr std::size_t kBytes = 8 + 4 + 4 + kNonceBytes;
  using Bytes = std::array<std::byte, kBytes>;
  Bytes encode() const;
  static std::optional<std::string> decode(const Bytes& bytes, Hello& out);
};

// The accepting side's answer to a hello.
enum class AckStatus : std::uint32_t { admitted = 0, bad_token = 1, bad_world = 2, bad_rank = 3 };
inline constexpr std::uint16_t kLastAckStatus = 3;
struct Ack {
  AckStatus status = AckStatus::admitted;
  static constexpr std::size_t kBytes = 8;
  using Bytes = std::array<std::byte, kBytes>;
  Bytes encode() const;
  static std::optional<std::string> decode(const Bytes& bytes, Ack& out);
};
std::string describe(AckStatus status);

// The accepting side's answer to a hello: its nonce and its proof, or a
// refusal (status other than admitted; nonce and proof then zero).
struct Challenge {
  AckStatus status = AckStatus::admitted;
  Nonce nonce{};
  Proof proof{};
  static constexpr std::size_t kBytes = 8 + kNonceBytes + kProofBytes;
  using Bytes = std::array<std::byte, kBytes>;
  Bytes encode() const;
  static std::optional<std::string> decode(const Bytes& bytes, Challenge& out);
};

// The connecting side's proof, answered by an Ack.
struct ClientProof {
  Proof proof{};
  static constexpr std::size_t kBytes = 8 + kProofBytes;
  using Bytes = std::array<std::byte, kBytes>;
  Bytes encode() const;
  static std::optional<std::string> decode(const Bytes& bytes, ClientProof& out);
};

}  // namespace gradex::wire
