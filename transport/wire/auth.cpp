#include "transport/wire/auth.h"

#include <sodium.h>

#include <algorithm>

// Boost 1.74's asio/awaitable.hpp uses std::exchange without including it.
#include <utility>

#include <boost/asio/ip/address.hpp>

#include "common/errors.h"

namespace gradex::wire {

namespace {

void put32(unsigned char* at, std::int32_t v) {
  const auto u = static_cast<std::uint32_t>(v);
  for (int i = 0; i < 4; ++i) at[i] = static_cast<unsigned char>((u >> (8 * i)) & 0xff);
}

// libsodium must be initialised once before use; sodium_init is thread-safe
// and returns 1 when it already was. It fails only when the operating
// system's random source cannot be opened, which leaves no safe fallback.
void require_sodium() {
  static const int state = sodium_init();
  GRADEX_ENFORCE(state >= 0, "libsodium could not start: the system's random source is unavailable");
}

void random_bytes(void* out, std::size_t n) {
  require_sodium();
  randombytes_buf(out, n);
}

}  // namespace

bool is_loopback_host(const std::string& host) {
  if (host == "localhost") return true;
  boost::system::error_code ec;
  const auto ip = boost::asio::ip::make_address(host, ec);
  return !ec && ip.is_loopback();
}

void require_token_beyond_loopback(const std::string& bind_host, const std::string& token) {
  if (!token.empty() || is_loopback_host(bind_host)) return;
  throw ConfigError("GRADEX_TOKEN",
                    "required when listening beyond loopback (GRADEX_BIND=" + bind_host +
                        "): without a shared secret anyone who reaches the port could join; "
                        "set GRADEX_TOKEN to the same random secret on every rank");
}

std::chrono::milliseconds hello_deadline(std::chrono::milliseconds timeout) {
  return std::min(kHelloDeadline, timeout);
}

Nonce random_nonce() {
  Nonce n;
  random_bytes(n.data(), n.size());
  return n;
}

std::string random_hex(std::size_t bytes) {
  std::string raw(bytes, '\0');
  random_bytes(raw.data(), raw.size());
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : raw) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

Proof prove(const std::string& token, const Exchange& x, Direction direction) {
  // The label binds the proof to its direction and to this protocol.
  const std::string label = direction == Direction::client_to_server
                                ? "gradex v2 client proof"
                                : "gradex v2 server proof";
  std::string msg = label;
  msg.push_back('\0');
  msg.append(reinterpret_cast<const char*>(x.client_nonce.data()), x.client_nonce.size());
  msg.append(reinterpret_cast<const char*>(x.server_nonce.data()), x.server_nonce.size());
  unsigned char ints[12];
  put32(ints, x.client_rank);
  put32(ints + 4, x.server_rank);
  put32(ints + 8, x.size);
  msg.append(reinterpret_cast<const char*>(ints), sizeof ints);
  return derive_key(token, msg);
}

std::array<std::byte, 32> derive_key(const std::string& token, const std::string& label) {
  static_assert(crypto_auth_hmacsha256_BYTES == 32);
  require_sodium();
  // The streaming form takes a key of any length (the one-shot form wants
  // exactly 32 bytes); a token is whatever the user set.
  crypto_auth_hmacsha256_state state;
  crypto_auth_hmacsha256_init(&state, reinterpret_cast<const unsigned char*>(token.data()),
                              token.size());
  crypto_auth_hmacsha256_update(&state, reinterpret_cast<const unsigned char*>(label.data()),
                                label.size());
  std::array<std::byte, 32> out{};
  crypto_auth_hmacsha256_final(&state, reinterpret_cast<unsigned char*>(out.data()));
  sodium_memzero(&state, sizeof state);
  return out;
}

bool verify(const std::string& token, const Exchange& exchange, Direction direction,
            const Proof& proof) {
  const Proof expected = prove(token, exchange, direction);
  return sodium_memcmp(expected.data(), proof.data(), proof.size()) == 0;
}

}  // namespace gradex::wire
