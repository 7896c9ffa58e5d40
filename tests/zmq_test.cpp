// What only the ZeroMQ transport has: admission over ROUTER/DEALER with
// CURVE, and a killed process noticed through the socket monitors. The
// contract every transport keeps, and every scheme over it, are tested in
// transport_conformance_test.cpp.
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <zmq.h>

#include "common/errors.h"
#include "transport/wire/auth.h"
#include "transport/wire/frame.h"
#include "transport/tcp/mesh.h"
#include "lost_peer_check.h"
#include "transport/local_group.h"
#include "transport/zmq/curve.h"
#include "transport/zmq/endpoint.h"
#include "runner/measure_group.h"
#include "schemes/registry.h"
#include "scheme_options.h"

namespace gradex {
namespace {

using namespace std::chrono_literals;

TransportOptions quick(std::chrono::milliseconds timeout = 20'000ms) {
  return testing::transport_options(timeout);
}

TEST(ZmqAdmission, WrongTokenIsRefused) {
  TransportOptions other = quick(800ms);
  other.token = "not-the-token";
  ZmqEndpoint a(0, 2, quick(800ms));
  ZmqEndpoint b(1, 2, other);
  const std::vector<std::string> addresses = {a.address(), b.address()};
  std::string b_error;
  std::thread tb([&] {
    try {
      b.connect(addresses);
    } catch (const std::exception& e) {
      b_error = e.what();
    }
  });
  EXPECT_THROW(a.connect(addresses), std::exception);
  tb.join();
  EXPECT_NE(b_error.find("no admission with rank(s) 0"), std::string::npos) << b_error;
  EXPECT_NE(b_error.find("token mismatch"), std::string::npos) << b_error;
}

// This process's virtual memory in bytes, from /proc: a reservation shows
// there even before its pages are touched.
long virtual_bytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  long kb = 0;
  while (status >> key) {
    if (key == "VmSize:") {
      status >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

// Strangers without the token, connecting before rank 1: a plain ZeroMQ
// peer that claims rank 1's old routing id, one keyed by another token, and
// a raw socket whose ZMTP frame announces 16 GiB. None gets an answer or
// makes the endpoint allocate (on the old main the routing id blocked rank
// 1 and the announcement reserved 16.9 GB), and rank 1 still joins.
TEST(ZmqAdmission, StrangersCannotClaimARankOrAllocate) {
  ZmqEndpoint a(0, 2, quick(5'000ms));
  ZmqEndpoint b(1, 2, quick(5'000ms));
  const std::vector<std::string> addresses = {a.address(), b.address()};
  const long before = virtual_bytes();
  void* ctx = zmq_ctx_new();
  const auto stranger = [&](const char* token) {
    void* s = zmq_socket(ctx, ZMQ_DEALER);
    if (token != nullptr) zmq_security::make_client(s, token);
    const unsigned char squatted[5] = {'g', 1, 0, 0, 0};
    zmq_setsockopt(s, ZMQ_ROUTING_ID, squatted, sizeof squatted);
    int linger = 0, wait_ms = 500;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(s, ZMQ_RCVTIMEO, &wait_ms, sizeof wait_ms);
    // A DEALER whose connection never finishes its handshake has no pipe
    // to queue on, and a send would block for ever: bound it.
    zmq_setsockopt(s, ZMQ_SNDTIMEO, &wait_ms, sizeof wait_ms);
    EXPECT_EQ(zmq_connect(s, ("tcp://" + a.address()).c_str()), 0);
    const auto hello = wire::Hello{1, 2, wire::random_nonce()}.encode();
    zmq_send(s, hello.data(), hello.size(), 0);
    return s;
  };
  void* plain = stranger(nullptr);
  void* keyed = stranger("not-the-token");
  // ZMTP 3.0 by hand: a NULL-mechanism greeting, READY, then a frame
  // header announcing 16 GiB (flags 0x02: long size; 8 bytes big-endian).
  const auto [host, port] = tcp::split_address(a.address(), "address");
  const int raw = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<std::uint16_t>(std::stoi(port)));
  ::inet_pton(AF_INET, host.c_str(), &sa.sin_addr);
  ASSERT_EQ(::connect(raw, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  std::string zmtp(64, '\0');
  zmtp[0] = '\xff';
  zmtp[9] = '\x7f';
  zmtp[10] = 3;
  zmtp.replace(12, 4, "NULL");
  const std::string ready = std::string("\x04\x1c\x05READY\x0bSocket-Type", 18) +
                            std::string("\x00\x00\x00\x06" "DEALER", 10);
  std::string huge = "\x02";
  for (int i = 7; i >= 0; --i) huge += static_cast<char>((std::uint64_t{16} << 30) >> (8 * i));
  const std::string bytes = zmtp + ready + huge + std::string(4096, 'x');
  (void)::send(raw, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  std::string a_error;
  std::thread ta([&] {
    try {
      a.connect(addresses);
    } catch (const std::exception& e) {
      a_error = e.what();
    }
  });
  char answer[256];
  EXPECT_EQ(zmq_recv(plain, answer, sizeof answer, 0), -1);  // nothing comes back
  EXPECT_EQ(zmq_recv(keyed, answer, sizeof answer, 0), -1);
  b.connect(addresses);
  ta.join();
  EXPECT_EQ(a_error, "");
  int v = 5, w = 0;
  b.send(0, &v, sizeof v, 3);
  a.recv(1, &w, sizeof w, 3);
  EXPECT_EQ(w, 5);
  EXPECT_LT(virtual_bytes() - before, 1L << 30) << "the strangers made the endpoint allocate";
  std::thread cb2([&] { b.close(); });
  a.close();
  cb2.join();
  ::close(raw);
  zmq_close(plain);
  zmq_close(keyed);
  zmq_ctx_term(ctx);
}

// Reads one line from a pipe (bounded).
std::string read_line(int fd) {
  std::string line;
  char ch = 0;
  while (line.size() < 200 && ::read(fd, &ch, 1) == 1 && ch != '\n') line += ch;
  return line;
}

// A real crash: rank 2 is a forked process that connects and exits without
// a goodbye; the survivors must name it well within their timeout.
TEST(ZmqFailure, AKilledProcessEndsTheSurvivorsQuickly) {
  int to_child[2], from_child[2];
  ASSERT_EQ(::pipe(to_child), 0);
  ASSERT_EQ(::pipe(from_child), 0);
  // Fork before any libzmq context or thread exists in this process.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      ZmqEndpoint c(2, 3, quick());
      const std::string mine = c.address() + "\n";
      if (::write(from_child[1], mine.data(), mine.size()) < 0) ::_exit(4);
      const std::string a0 = read_line(to_child[0]);
      const std::string a1 = read_line(to_child[0]);
      c.connect({a0, a1, c.address()});
      std::this_thread::sleep_for(200ms);
    } catch (...) {
      ::_exit(3);
    }
    ::_exit(0);  // no close(), no destructors: like a kill
  }
  const std::string a2 = read_line(from_child[0]);
  ZmqEndpoint a(0, 3, quick());
  ZmqEndpoint b(1, 3, quick());
  const std::string list = a.address() + "\n" + b.address() + "\n";
  ASSERT_EQ(::write(to_child[1], list.data(), list.size()), static_cast<ssize_t>(list.size()));
  const std::vector<std::string> addresses = {a.address(), b.address(), a2};
  testing::expect_survivors_name_the_lost_peer(a, b, addresses, child);
  for (int fd : {to_child[0], to_child[1], from_child[0], from_child[1]}) ::close(fd);
}

}  // namespace
}  // namespace gradex
