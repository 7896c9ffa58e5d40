// What one small message costs underneath gradex's process transports, on
// this machine: a ping-pong of 1 KiB messages between two processes over
// loopback, measured three ways:
//   tcp          blocking send()/recv() on one TCP connection (TCP_NODELAY):
//                the kernel's and the scheduler's share of any transport;
//   tcp spin     the same, the receiver polling with MSG_DONTWAIT instead of
//                sleeping (as gradex's tcp transport does for spin_us);
//   zmq          libzmq as gradex's zmq transport uses it: each process binds
//                a ROUTER and sends through a DEALER connected to the other's
//                ROUTER, so a message crosses both processes' I/O threads;
//   zmq+curve    the same with CURVE, keyed as gradex keys it
//                (transport/zmq/curve.h);
//   ... spin     the application thread polling (ZMQ_DONTWAIT) instead of
//                sleeping: what is left is libzmq's own I/O threads, which
//                sleep in epoll and must be woken for every message.
// One-way time = round trip / 2; the median and the 10th/90th percentiles
// of ROUNDS round trips after a warm-up. bench/small_messages.sh sets these
// against the ring's 4 KiB all-reduce over tcp and zmq.
//   build/default/bench/gradex_message_latency [round_trips]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "transport/zmq/curve.h"

namespace {

constexpr std::size_t kBytes = 1024;
constexpr int kWarmup = 200;
const std::string kToken = "message-latency-bench";

double now_us() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void report(const char* name, std::vector<double> one_way) {
  std::sort(one_way.begin(), one_way.end());
  const auto at = [&](double q) { return one_way[static_cast<std::size_t>(q * (one_way.size() - 1))]; };
  std::printf("%-14s  one-way %7.1f us median  (p10 %7.1f, p90 %7.1f)  %zu round trips\n", name,
              at(0.5), at(0.1), at(0.9), one_way.size());
}

bool full_io(int fd, char* p, std::size_t n, bool send, bool spin = false) {
  while (n > 0) {
    const ssize_t k = send ? ::send(fd, p, n, MSG_NOSIGNAL)
                           : ::recv(fd, p, n, spin ? MSG_DONTWAIT : 0);
    if (k < 0 && spin && errno == EAGAIN) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

// ---- raw TCP ----------------------------------------------------------------

void tcp_pingpong(int round_trips, bool spin) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listener, 1) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    std::perror("tcp listen");
    std::exit(1);
  }
  const int one = 1;
  const pid_t child = ::fork();
  if (child == 0) {  // echo
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) _exit(1);
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::vector<char> buf(kBytes);
    while (full_io(fd, buf.data(), kBytes, false, spin) && full_io(fd, buf.data(), kBytes, true)) {
    }
    _exit(0);
  }
  const int fd = ::accept(listener, nullptr, nullptr);
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  std::vector<char> buf(kBytes);
  std::vector<double> samples;
  for (int i = -kWarmup; i < round_trips; ++i) {
    const double t0 = now_us();
    if (!full_io(fd, buf.data(), kBytes, true) || !full_io(fd, buf.data(), kBytes, false, spin)) {
      std::fprintf(stderr, "tcp: the echo process went away\n");
      std::exit(1);
    }
    if (i >= 0) samples.push_back((now_us() - t0) / 2);
  }
  ::close(fd);
  ::close(listener);
  ::waitpid(child, nullptr, 0);
  report(spin ? "tcp spin" : "tcp", std::move(samples));
}

// ---- libzmq, ROUTER/DEALER as gradex uses it ----------------------------------

struct ZmqSide {
  void* ctx = zmq_ctx_new();
  void* router = nullptr;
  void* dealer = nullptr;
  ~ZmqSide() {
    int zero = 0;
    for (void* s : {router, dealer}) {
      if (s == nullptr) continue;
      zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
      zmq_close(s);
    }
    zmq_ctx_term(ctx);
  }
};

// Binds this side's ROUTER on `port`, connects its DEALER to `peer_port`.
void zmq_setup(ZmqSide& z, bool curve, int port, int peer_port) {
  z.router = zmq_socket(z.ctx, ZMQ_ROUTER);
  z.dealer = zmq_socket(z.ctx, ZMQ_DEALER);
  if (curve) {
    gradex::zmq_security::make_server(z.router, kToken);
    gradex::zmq_security::make_client(z.dealer, kToken);
  }
  if (zmq_bind(z.router, ("tcp://127.0.0.1:" + std::to_string(port)).c_str()) != 0 ||
      zmq_connect(z.dealer, ("tcp://127.0.0.1:" + std::to_string(peer_port)).c_str()) != 0) {
    std::fprintf(stderr, "zmq setup: %s\n", zmq_strerror(zmq_errno()));
    std::exit(1);
  }
}

// A message on the ROUTER: its routing id, then the payload.
bool zmq_receive(void* router, std::vector<char>& buf, bool spin) {
  char id[256];
  while (zmq_recv(router, id, sizeof id, spin ? ZMQ_DONTWAIT : 0) < 0) {
    if (!spin || zmq_errno() != EAGAIN) return false;
  }
  return zmq_recv(router, buf.data(), buf.size(), 0) >= 0;
}

void zmq_pingpong(int round_trips, bool curve, bool spin) {
  const int base = 20000 + static_cast<int>(::getpid() % 20000);
  const pid_t child = ::fork();
  if (child == 0) {  // echo through its own ROUTER/DEALER pair
    ZmqSide z;
    zmq_setup(z, curve, base + 1, base);
    std::vector<char> buf(kBytes);
    while (zmq_receive(z.router, buf, spin)) {
      if (buf[0] == 'q') break;
      zmq_send(z.dealer, buf.data(), buf.size(), 0);
    }
    _exit(0);
  }
  ZmqSide z;
  zmq_setup(z, curve, base, base + 1);
  std::vector<char> buf(kBytes, 'p');
  std::vector<double> samples;
  for (int i = -kWarmup; i < round_trips; ++i) {
    const double t0 = now_us();
    zmq_send(z.dealer, buf.data(), buf.size(), 0);
    if (!zmq_receive(z.router, buf, spin)) {
      std::fprintf(stderr, "zmq: %s\n", zmq_strerror(zmq_errno()));
      std::exit(1);
    }
    if (i >= 0) samples.push_back((now_us() - t0) / 2);
  }
  buf[0] = 'q';
  zmq_send(z.dealer, buf.data(), buf.size(), 0);
  ::waitpid(child, nullptr, 0);
  report((std::string(curve ? "zmq+curve" : "zmq") + (spin ? " spin" : "")).c_str(),
         std::move(samples));
}

}  // namespace

int main(int argc, char** argv) {
  const int round_trips = argc > 1 ? std::atoi(argv[1]) : 2000;
  if (round_trips < 1) {
    std::fprintf(stderr, "usage: %s [round_trips >= 1]\n", argv[0]);
    return 2;
  }
  std::printf("# %zu-byte messages between two processes over loopback\n", kBytes);
  for (bool spin : {false, true}) {
    tcp_pingpong(round_trips, spin);
    zmq_pingpong(round_trips, false, spin);
    zmq_pingpong(round_trips, true, spin);
  }
  return 0;
}
