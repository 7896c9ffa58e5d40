// Peer authentication shared by every process transport (the TCP mesh, the
// rendezvous store, ZeroMQ): a challenge-response over a shared token that
// never crosses the wire.
//
// The connecting side (client) sends a fresh random nonce in its hello; the
// accepting side (server) answers with a nonce of its own and a proof, then
// the client answers with its proof. A proof is
//   HMAC-SHA256(token, label | client nonce | server nonce | client rank |
//               server rank | world size)
// with a different label per direction, so neither side's proof can be
// reflected as the other's, and a recorded exchange is useless against a
// new server nonce. Proofs are compared in constant time.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace gradex::wire {

inline constexpr std::size_t kNonceBytes = 32;
inline constexpr std::size_t kProofBytes = 32;  // SHA-256
using Nonce = std::array<std::byte, kNonceBytes>;
using Proof = std::array<std::byte, kProofBytes>;

// The rank a rendezvous store proves itself as (it is no rank of the group).
inline constexpr std::int32_t kStoreRank = -1;

// How long a freshly accepted connection may take to authenticate before it
// is dropped, whatever the run's timeout: a real peer answers in
// milliseconds, an idle socket must not hold a descriptor for long.
inline constexpr std::chrono::milliseconds kHelloDeadline{3000};
// At most this many accepted connections may be authenticating at once; a
// new one beyond it drops the oldest, so idle sockets can neither exhaust
// descriptors nor crowd out the real ranks (who authenticate at once).
inline constexpr std::size_t kMaxPendingConnections = 32;
// The hello deadline of a run whose timeout is `timeout`.
std::chrono::milliseconds hello_deadline(std::chrono::milliseconds timeout);

enum class Direction { client_to_server, server_to_client };

// What both sides of one exchange know.
struct Exchange {
  Nonce client_nonce{};
  Nonce server_nonce{};
  std::int32_t client_rank = 0;
  std::int32_t server_rank = 0;
  std::int32_t size = 0;
};

// Whether `host` (an IP address or "localhost") is loopback: 127.0.0.0/8 or ::1.
bool is_loopback_host(const std::string& host);
// Listening beyond loopback without a token would admit anyone who can
// reach the port: throws ConfigError naming GRADEX_TOKEN then.
void require_token_beyond_loopback(const std::string& bind_host, const std::string& token);

// A nonce from the operating system's CSPRNG (libsodium's randombytes_buf).
Nonce random_nonce();
// `bytes` random bytes from the CSPRNG, as lowercase hex (a launcher token).
std::string random_hex(std::size_t bytes);
Proof prove(const std::string& token, const Exchange& exchange, Direction direction);
// A 32-byte key for another use of the token (HMAC-SHA256 of `label`), so
// that no two uses share key material.
std::array<std::byte, 32> derive_key(const std::string& token, const std::string& label);
// Constant-time comparison of `proof` with the one `token` gives.
bool verify(const std::string& token, const Exchange& exchange, Direction direction,
            const Proof& proof);

}  // namespace gradex::wire
