// What only the TCP transport has: its waits and frames at every size,
// link shaping split across processes, hostile input at admission, and the
// text of its timeouts. The contract every transport keeps, and every
// scheme over it, are tested in transport_conformance_test.cpp.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/errors.h"
#include "hostile_peer.h"
#include "lost_peer_check.h"
#include "transport/port_shaper.h"
#include "transport/tcp/endpoint.h"
#include "transport/wire/auth.h"
#include "transport/wire/frame.h"
#include "transport/local_group.h"
#include "runner/measure_group.h"
#include "schemes/registry.h"
#include "scheme_options.h"

namespace gradex {
namespace {

using namespace std::chrono_literals;

TransportOptions quick(std::chrono::milliseconds timeout = 20'000ms) {
  return testing::transport_options(timeout);
}

// ---- matching -----------------------------------------------------------------

// A long message followed by a short one: however the long one's tail and
// the short one come off the socket together, the short one must arrive
// (bytes read ahead of where they go must never be left unread while the
// receiver waits for the socket).
TEST(Tcp, ShortMessagesAfterLongOnesNeverStall) {
  run_endpoint_ranks("tcp", 2, quick(10'000ms), [](Comm& c) {
    constexpr int kRounds = 24;
    for (int i = 0; i < kRounds; ++i) {
      // Around the 4 MiB a round of reading takes from one connection.
      const std::size_t bytes = (std::size_t{4} << 20) - 12'000 + std::size_t(i) * 1'000;
      std::vector<std::byte> long_one(bytes, std::byte(i));
      int short_one = i;
      if (c.rank() == 0) {
        std::vector<Request> rs;
        rs.push_back(c.isend(1, long_one.data(), bytes, 1));
        rs.push_back(c.isend(1, &short_one, sizeof short_one, 2));
        c.wait_all(rs);
        c.recv(1, &short_one, sizeof short_one, 3);  // in step: one round at a time
      } else {
        // Late, so that the socket holds megabytes when reading starts.
        std::this_thread::sleep_for(20ms);
        Request r = c.irecv(0, long_one.data(), bytes, 1);
        c.recv(0, &short_one, sizeof short_one, 2);
        c.wait(r);
        EXPECT_EQ(short_one, i);
        EXPECT_EQ(long_one[bytes - 1], std::byte(i));
        c.send(0, &short_one, sizeof short_one, 3);
      }
    }
  });
}

// Waits that sleep at once (spin 0) and waits that poll for long (so most
// messages arrive while polling) must deliver alike.
class TcpSpin : public ::testing::TestWithParam<int> {};

TEST_P(TcpSpin, EarlyAndLateMessagesOfEverySizeArriveIntact) {
  // Sizes around the receive-reduce chunk, posted before and after arrival.
  const std::vector<std::size_t> counts = {0, 1, 65'537, 300'001};
  TransportOptions options = quick();
  options.spin = std::chrono::microseconds(GetParam());
  run_endpoint_ranks("tcp", 2, options, [&](Comm& c) {
    for (std::size_t n : counts) {
      std::vector<float> v(n);
      for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i % 1000);
      if (c.rank() == 0) {
        c.send(1, v.data(), n * sizeof(float), 1);  // eager: completes unmatched
        c.barrier();
        c.send(1, v.data(), n * sizeof(float), 2);
        c.send(1, v.data(), n * sizeof(float), 3);
      } else {
        c.barrier();  // tag 1 is now early (unexpected)
        std::vector<float> a(n), b(n, 1.0f);
        c.recv(0, a.data(), n * sizeof(float), 1);
        Request rr = c.irecv_reduce(0, Tensor{b.data(), n, DType::f32}, ReduceOp::sum, 3);
        c.recv(0, a.data(), n * sizeof(float), 2);
        c.wait(rr);
        for (std::size_t i = 0; i < n; ++i) {
          ASSERT_EQ(a[i], v[i]) << "element " << i << " of " << n;
          ASSERT_EQ(b[i], v[i] + 1.0f) << "element " << i << " of " << n;
        }
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Waits, TcpSpin, ::testing::Values(0, 100, 50'000),
                         [](const auto& info) { return "spin_us_" + std::to_string(info.param); });

// ---- link shaping across processes ---------------------------------------------

TEST(PortShaper, HalvesReproduceTheSharedShaper) {
  // Two workers on node 0, a server alone on node 1: both workers push to
  // the server at once, then the server answers both.
  const Topology topo = Topology::grouped(2, 2, 1, {8e9, 5e-6}, {1e9, 20e-6});
  LinkShaper whole(topo);
  PortShaper w0(topo, 0), w1(topo, 1), server(topo, 2);
  const std::size_t mb = 1'000'000;
  const auto a = whole.reserve(0, 2, mb, 0.0);
  const auto b = whole.reserve(1, 2, mb, 0.0);
  const auto ea = w0.egress(2, mb, 0.0);
  const auto eb = w1.egress(2, mb, 0.0);
  EXPECT_DOUBLE_EQ(server.ingress(0, mb, ea.start), a.arrival);
  EXPECT_DOUBLE_EQ(server.ingress(1, mb, eb.start), b.arrival);  // queued behind the first
  const auto c = whole.reserve(2, 0, mb, b.arrival);
  const auto ec = server.egress(0, mb, b.arrival);
  EXPECT_DOUBLE_EQ(ec.done, c.sender_free);
  EXPECT_DOUBLE_EQ(w0.ingress(2, mb, ec.start), c.arrival);
  // Intra-node traffic uses the other ports and is not delayed by the NIC.
  EXPECT_DOUBLE_EQ(w1.ingress(0, mb, w0.egress(1, mb, 0.0).start), mb / 8e9 + 5e-6);
}

TEST(PortShaper, ZeroByteSignalsMatchTheSharedShaper) {
  const Topology topo = Topology::grouped(3, 1, 0, {}, {1e6, 0.001});
  LinkShaper whole(topo);
  PortShaper w0(topo, 0), w1(topo, 1), w2(topo, 2);
  const auto data = w0.egress(1, 1'000'000, 0.0);
  EXPECT_DOUBLE_EQ(w1.ingress(0, 1'000'000, data.start), whole.reserve(0, 1, 1'000'000, 0).arrival);
  const auto signal = w2.egress(1, 0, 0.5);
  EXPECT_DOUBLE_EQ(signal.done, 0.5);
  EXPECT_DOUBLE_EQ(w1.ingress(2, 0, signal.start), whole.reserve(2, 1, 0, 0.5).arrival);
}

// ---- hostile input ------------------------------------------------------------

TEST(TcpFrame, RejectsBadMagicVersionKindAndAbsurdLength) {
  wire::FrameHeader h;
  h.tag = 9;
  h.length = 100;
  wire::FrameHeader out;
  EXPECT_FALSE(wire::FrameHeader::decode(h.encode(), 1000, out).has_value());
  EXPECT_EQ(out.tag, 9u);
  auto bytes = h.encode();
  bytes[0] = std::byte{0x41};
  EXPECT_NE(wire::FrameHeader::decode(bytes, 1000, out).value_or("").find("bad magic"),
            std::string::npos);
  bytes = h.encode();
  bytes[4] = std::byte{9};
  EXPECT_NE(wire::FrameHeader::decode(bytes, 1000, out).value_or("").find("version"),
            std::string::npos);
  bytes = h.encode();
  bytes[6] = std::byte{77};
  EXPECT_NE(wire::FrameHeader::decode(bytes, 1000, out).value_or("").find("kind"),
            std::string::npos);
  h.length = ~std::uint64_t{0};
  EXPECT_NE(wire::FrameHeader::decode(h.encode(), 1000, out).value_or("").find("exceeds"),
            std::string::npos);
}

// Connects a raw socket to `address` and writes `bytes` of garbage.
int send_garbage(const std::string& address, std::size_t bytes) {
  const int port = std::stoi(address.substr(address.rfind(':') + 1));
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<std::uint16_t>(port));
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) return -1;
  std::vector<char> junk(bytes, 'x');
  (void)!::write(fd, junk.data(), junk.size());
  return fd;
}

TEST(TcpAdmission, GarbageIsRefusedAndTheRealPeerStillJoins) {
  TcpEndpoint a(0, 2, quick(5'000ms));
  TcpEndpoint b(1, 2, quick(5'000ms));
  const std::vector<std::string> addresses = {a.address(), b.address()};
  const int junk = send_garbage(a.address(), 200);  // before the real peer
  ASSERT_GE(junk, 0);
  std::thread tb([&] { b.connect(addresses); });
  a.connect(addresses);
  tb.join();
  int x = 42, y = 0;
  std::thread sender([&] { b.send(0, &x, sizeof x, 1); });
  a.recv(1, &y, sizeof y, 1);
  sender.join();
  EXPECT_EQ(y, 42);
  std::thread cb([&] { b.close(); });
  a.close();
  cb.join();
  ::close(junk);
}

TEST(TcpAdmission, GarbageAloneEndsInATimeoutThatSaysWhy) {
  TcpEndpoint a(0, 2, quick(600ms));
  const int junk = send_garbage(a.address(), 200);
  try {
    a.connect({a.address(), "127.0.0.1:1"});
    FAIL() << "connect should time out";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("rank(s) 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bad magic"), std::string::npos) << e.what();
  }
  ::close(junk);
}

TEST(TcpAdmission, WrongTokenIsRefused) {
  TransportOptions other = quick(800ms);
  other.token = "not-the-token";
  TcpEndpoint a(0, 2, quick(800ms));
  TcpEndpoint b(1, 2, other);
  const std::vector<std::string> addresses = {a.address(), b.address()};
  std::string b_error;
  std::thread tb([&] {
    try {
      b.connect(addresses);
    } catch (const std::exception& e) {
      b_error = e.what();
    }
  });
  EXPECT_THROW(a.connect(addresses), TimeoutError);
  tb.join();
  EXPECT_NE(b_error.find("token mismatch"), std::string::npos) << b_error;
}

std::string hex(const std::array<std::byte, 32>& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (std::byte b : bytes) {
    out += kDigits[std::to_integer<int>(b) >> 4];
    out += kDigits[std::to_integer<int>(b) & 15];
  }
  return out;
}

// The admission's keyed hash is HMAC-SHA256 exactly: RFC 4231's test cases
// 2 (a short key) and 6 (a key longer than SHA-256's block, hashed first).
TEST(TcpAdmission, TheProofIsHmacSha256AsRfc4231Gives) {
  EXPECT_EQ(hex(wire::derive_key("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_EQ(hex(wire::derive_key(std::string(131, '\xaa'),
                                 "Test Using Larger Than Block-Size Key - Hash Key First")),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  wire::Exchange x;
  x.client_nonce = wire::random_nonce();
  x.server_nonce = wire::random_nonce();
  EXPECT_NE(x.client_nonce, x.server_nonce);
  const auto proof = wire::prove("t", x, wire::Direction::client_to_server);
  EXPECT_TRUE(wire::verify("t", x, wire::Direction::client_to_server, proof));
  EXPECT_FALSE(wire::verify("t", x, wire::Direction::server_to_client, proof));
  EXPECT_FALSE(wire::verify("u", x, wire::Direction::client_to_server, proof));
}

// Strangers that claim rank 1 with an empty or a wrong token are turned
// away (today's main admitted the empty one), and rank 1 still joins.
TEST(TcpAdmission, StrangersWithAnEmptyOrWrongTokenAreRefusedAndTheRealPeerJoins) {
  TcpEndpoint a(0, 2, quick(5'000ms));
  TcpEndpoint b(1, 2, quick(5'000ms));
  const std::vector<std::string> addresses = {a.address(), b.address()};
  std::string a_error;
  std::thread ta([&] {
    try {
      a.connect(addresses);
    } catch (const std::exception& e) {
      a_error = e.what();
    }
  });
  for (const std::string token : {"", "wrong"}) {
    testing::RawPeer stranger(a.address());
    ASSERT_TRUE(stranger.connected());
    EXPECT_EQ(stranger.admit(1, 2, 0, token), wire::AckStatus::bad_token) << "token '" << token << "'";
  }
  b.connect(addresses);
  ta.join();
  ASSERT_EQ(a_error, "");
  int x = 7, y = 0;
  std::thread sender([&] { b.send(0, &x, sizeof x, 1); });
  a.recv(1, &y, sizeof y, 1);
  sender.join();
  EXPECT_EQ(y, 7);
  std::thread cb([&] { b.close(); });
  a.close();
  cb.join();
}

// A sniffer records the bytes rank 1 sent in a real admission and replays
// them to a new group with the same token: the fresh server nonce makes
// the recorded proof worthless.
TEST(TcpAdmission, AReplayedAdmissionIsRefused) {
  std::vector<char> recorded;
  {
    TcpEndpoint first(0, 2, quick(3'000ms));
    std::thread t([&] {
      try {
        first.connect({first.address(), "127.0.0.1:1"});
      } catch (const std::exception&) {
      }
    });
    testing::RawPeer honest(first.address());
    EXPECT_EQ(honest.admit(1, 2, 0, "test-token"), wire::AckStatus::admitted);
    recorded = honest.sent();
    t.join();
  }
  TcpEndpoint again(0, 2, quick(1'000ms));
  std::string error;
  std::thread t([&] {
    try {
      again.connect({again.address(), "127.0.0.1:1"});
    } catch (const TimeoutError& e) {
      error = e.what();
    }
  });
  testing::RawPeer replay(again.address());
  ASSERT_TRUE(replay.write(recorded.data(), recorded.size()));
  wire::Challenge::Bytes challenge{};
  EXPECT_TRUE(replay.read(challenge));
  EXPECT_EQ(replay.ack(), wire::AckStatus::bad_token);
  t.join();
  EXPECT_NE(error.find("token mismatch"), std::string::npos) << error;
}

// 300 idle connections (no hello) against a forming group, with
// descriptors scarce: the endpoint holds only a few pending ones at once
// (dropping the oldest) and the real ranks still join. On today's main
// every idle socket kept its descriptor until the deadline, accept() ran
// out of descriptors and the group failed.
TEST(TcpAdmission, ThreeHundredIdleConnectionsDoNotKeepTheRanksOut) {
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  TcpEndpoint a(0, 3, quick(8'000ms));
  TcpEndpoint b(1, 3, quick(8'000ms));
  TcpEndpoint c(2, 3, quick(8'000ms));
  const std::vector<std::string> addresses = {a.address(), b.address(), c.address()};
  const int port = std::stoi(a.address().substr(a.address().rfind(':') + 1));
  std::vector<int> idle;
  for (int i = 0; i < 300; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<std::uint16_t>(port));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    (void)::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);  // in progress is fine
    idle.push_back(fd);
  }
  // Room for the idle sockets and the group, not for an endpoint that
  // keeps every idle connection it accepted.
  rlimit tight = saved;
  tight.rlim_cur = std::min<rlim_t>(saved.rlim_cur, 450);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &tight), 0);
  std::string error;
  std::thread tb([&] { b.connect(addresses); });
  std::thread tc([&] { c.connect(addresses); });
  try {
    a.connect(addresses);
  } catch (const std::exception& e) {
    error = e.what();
  }
  tb.join();
  tc.join();
  ::setrlimit(RLIMIT_NOFILE, &saved);
  for (int fd : idle) ::close(fd);
  ASSERT_EQ(error, "");
  std::thread cb([&] { b.close(); });
  std::thread cc([&] { c.close(); });
  a.close();
  cb.join();
  cc.join();
}

// An admitted peer announcing a 2^36-1 byte frame is refused before any
// allocation, with an error naming it.
TEST(TcpAdmission, AnOversizedFrameFromAnAdmittedPeerNamesIt) {
  TransportOptions o = quick(3'000ms);
  o.max_message_bytes = 1 << 20;
  TcpEndpoint a(0, 2, o);
  std::thread t([&] {
    testing::RawPeer peer(a.address());
    if (peer.admit(1, 2, 0, "test-token") != wire::AckStatus::admitted) return;
    wire::FrameHeader h;
    h.tag = 1;
    h.length = (std::uint64_t{1} << 36) - 1;
    peer.write(h.encode());
    std::this_thread::sleep_for(500ms);  // keep the connection open while a reads
  });
  a.connect({a.address(), "127.0.0.1:1"});
  int y = 0;
  try {
    a.recv(1, &y, sizeof y, 1);
    ADD_FAILURE() << "the frame should be refused";
  } catch (const PeerLostError& e) {
    EXPECT_EQ(e.peer(), 1);
    EXPECT_NE(std::string(e.what()).find("from rank 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("exceeds"), std::string::npos) << e.what();
  }
  t.join();
}

// ---- failures -----------------------------------------------------------------

// A timeout also says what the endpoint had in hand: here the receive it
// waits for, and a message under another tag that nobody receives.
TEST(TcpFailure, ATimeoutSaysWhatWasPending) {
  try {
    run_endpoint_ranks("tcp", 2, quick(300ms), [](Comm& c) {
      int x = 0;
      if (c.rank() == 0) {
        c.recv(1, &x, sizeof x, 5);
      } else {
        c.send(0, &x, sizeof x, 6);
        std::this_thread::sleep_for(600ms);
      }
    });
    FAIL() << "rank 0 should time out";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("1 receive(s) posted, 1 message(s) waiting for theirs"),
              std::string::npos)
        << e.what();
  }
}

// Polling before sleeping never stretches a wait past its timeout.
TEST(TcpFailure, AWaitThatPollsLongerThanTheTimeoutStillTimesOut) {
  TransportOptions options = quick(300ms);
  options.spin = 10s;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(run_endpoint_ranks("tcp", 2, options,
                                  [](Comm& c) {
                                    int x = 0;
                                    if (c.rank() == 0) c.recv(1, &x, sizeof x, 5);
                                    else std::this_thread::sleep_for(600ms);
                                  }),
               TimeoutError);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
}

// A real crash: rank 2 is a forked process that connects and then exits
// without a goodbye; the survivors must name it well within their timeout.
TEST(TcpFailure, AKilledProcessEndsTheSurvivorsQuickly) {
  TcpEndpoint a(0, 3, quick(20'000ms));
  TcpEndpoint b(1, 3, quick(20'000ms));
  const std::vector<std::string> addresses = {a.address(), b.address(), "127.0.0.1:1"};
  // Fork before any thread of this test exists.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      TcpEndpoint c(2, 3, quick(20'000ms));
      c.connect(addresses);
      std::this_thread::sleep_for(200ms);
    } catch (...) {
      ::_exit(3);
    }
    ::_exit(0);  // no close(), no destructors: like a kill
  }
  testing::expect_survivors_name_the_lost_peer(a, b, addresses, child);
}

}  // namespace
}  // namespace gradex
