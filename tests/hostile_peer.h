// A peer written with raw sockets, for tests of admission: it speaks the
// wire format of transport/wire/frame.h byte by byte, with whatever token (or
// recorded bytes) a test gives it, and every read ends by a deadline.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

#include "transport/wire/auth.h"
#include "transport/wire/frame.h"

namespace gradex::testing {

class RawPeer {
 public:
  // Connects to 127.0.0.1:port of "host:port"; reads give up after 3 s.
  explicit RawPeer(const std::string& address) {
    const int port = std::stoi(address.substr(address.rfind(':') + 1));
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{3, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<std::uint16_t>(port));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
  }
  ~RawPeer() { ::close(fd_); }
  RawPeer(const RawPeer&) = delete;
  RawPeer& operator=(const RawPeer&) = delete;

  bool connected() const { return connected_; }

  bool write(const void* data, std::size_t n) {
    sent_.insert(sent_.end(), static_cast<const char*>(data), static_cast<const char*>(data) + n);
    return ::send(fd_, data, n, MSG_NOSIGNAL) == static_cast<ssize_t>(n);
  }
  template <typename Bytes>
  bool write(const Bytes& b) { return write(b.data(), b.size()); }

  // Reads exactly b.size() bytes; false on EOF or after the read timeout.
  template <typename Bytes>
  bool read(Bytes& b) {
    std::size_t got = 0;
    while (got < b.size()) {
      const ssize_t n = ::recv(fd_, reinterpret_cast<char*>(b.data()) + got, b.size() - got, 0);
      if (n <= 0) return false;
      got += static_cast<std::size_t>(n);
    }
    return true;
  }

  // Plays the connecting side of admission as `rank` of `size` toward
  // `server_rank` with `token`; returns the final answer (nullopt when the
  // server closed or answered something else).
  std::optional<wire::AckStatus> admit(int rank, int size, int server_rank, const std::string& token) {
    wire::Exchange x{wire::random_nonce(), {}, rank, server_rank, size};
    if (!write(wire::Hello{rank, size, x.client_nonce}.encode())) return std::nullopt;
    wire::Challenge::Bytes cb{};
    wire::Challenge c;
    if (!read(cb) || wire::Challenge::decode(cb, c)) return std::nullopt;
    if (c.status != wire::AckStatus::admitted) return c.status;
    x.server_nonce = c.nonce;
    if (!write(wire::ClientProof{wire::prove(token, x, wire::Direction::client_to_server)}.encode())) {
      return std::nullopt;
    }
    return ack();
  }

  std::optional<wire::AckStatus> ack() {
    wire::Ack::Bytes ab{};
    wire::Ack a;
    if (!read(ab) || wire::Ack::decode(ab, a)) return std::nullopt;
    return a.status;
  }

  // Every byte this peer wrote, in order (what a sniffer would capture).
  const std::vector<char>& sent() const { return sent_; }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  bool connected_ = false;
  std::vector<char> sent_;
};

}  // namespace gradex::testing
