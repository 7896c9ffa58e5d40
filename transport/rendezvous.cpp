#include "transport/rendezvous.h"

// Boost 1.74's asio/awaitable.hpp uses std::exchange without including it.
#include <utility>

#include <boost/asio.hpp>

#include <array>
#include <mutex>
#include <optional>
#include <thread>

#include "common/debug_log.h"
#include "common/errors.h"
#include "transport/wire/admission_queue.h"
#include "transport/wire/frame.h"
#include "transport/tcp/mesh.h"

namespace gradex::tcp {

// The wire format and admission handshake (transport/wire/) speak for both
// the mesh and the rendezvous store.
using namespace wire;

namespace asio = boost::asio;
using ip_tcp = asio::ip::tcp;

namespace {

// Addresses travel as a 2-byte length and the text; an address is a host
// name or IP and a port, never longer than this.
constexpr std::size_t kMaxAddressBytes = 300;

void append_string(std::vector<char>& out, const std::string& s) {
  out.push_back(static_cast<char>(s.size() & 0xff));
  out.push_back(static_cast<char>(s.size() >> 8));
  out.insert(out.end(), s.begin(), s.end());
}


}  // namespace

struct RendezvousServer::Impl {
  asio::io_context io;
  ip_tcp::acceptor acceptor{io};
  int size;
  std::string token;
  std::chrono::milliseconds timeout;
  std::chrono::steady_clock::time_point deadline;
  mutable std::mutex mutex;  // table: written by the store's thread, read by missing()
  std::vector<std::string> table;
  std::vector<std::shared_ptr<ip_tcp::socket>> clients;
  int registered = 0;
  std::thread thread;

  struct Pending {
    std::shared_ptr<ip_tcp::socket> socket;
    Hello::Bytes hello{};
    Challenge::Bytes challenge{};
    ClientProof::Bytes proof{};
    std::array<unsigned char, 2> len{};
    std::string address;
    Ack::Bytes ack{};
    Exchange exchange;
    int rank = 0;
    asio::steady_timer timer;
    bool settled = false;
    explicit Pending(asio::io_context& io) : socket(std::make_shared<ip_tcp::socket>(io)), timer(io) {}
  };
  using PendingPtr = std::shared_ptr<Pending>;
  AdmissionQueue<Pending> pending;

  bool taken(int rank) const {
    std::lock_guard lock(mutex);
    return !table[static_cast<std::size_t>(rank)].empty();
  }

  // Turns a connection away (with `status` when it deserves an answer).
  void refuse(const PendingPtr& st, std::optional<AckStatus> status = std::nullopt) {
    if (st->settled) return;
    AdmissionQueue<Pending>::settle(*st);
    if (!status) {
      boost::system::error_code ignored;
      st->socket->close(ignored);
      return;
    }
    st->ack = Ack{*status}.encode();
    asio::async_write(*st->socket, asio::buffer(st->ack), [st](auto, std::size_t) {
      boost::system::error_code ignored;
      st->socket->close(ignored);
    });
  }

  void accept() {
    auto st = std::make_shared<Pending>(io);
    acceptor.async_accept(*st->socket, [this, st](boost::system::error_code ec) {
      if (ec) return;
      pending.watch(st, hello_deadline(timeout),
                    [this](const PendingPtr& p, const char*) { refuse(p); });
      asio::async_read(*st->socket, asio::buffer(st->hello),
                       [this, st](auto ec2, std::size_t) { on_hello(st, ec2); });
      if (registered < size) accept();
    });
  }

  void on_hello(const PendingPtr& st, boost::system::error_code ec) {
    if (ec || st->settled) return refuse(st);
    Hello h;
    if (Hello::decode(st->hello, h)) return refuse(st);  // not a gradex peer: drop it
    Challenge c;
    if (h.size != size) c.status = AckStatus::bad_world;
    else if (h.rank < 0 || h.rank >= size || taken(h.rank)) c.status = AckStatus::bad_rank;
    if (c.status != AckStatus::admitted) {
      st->challenge = c.encode();
      AdmissionQueue<Pending>::settle(*st);
      asio::async_write(*st->socket, asio::buffer(st->challenge), [st](auto, std::size_t) {});
      return;
    }
    st->rank = h.rank;
    st->exchange = Exchange{h.nonce, random_nonce(), h.rank, kStoreRank, size};
    c.nonce = st->exchange.server_nonce;
    c.proof = prove(token, st->exchange, Direction::server_to_client);
    st->challenge = c.encode();
    asio::async_write(*st->socket, asio::buffer(st->challenge), [this, st](auto ec2, std::size_t) {
      if (ec2) return refuse(st);
      asio::async_read(*st->socket, asio::buffer(st->proof),
                       [this, st](auto ec3, std::size_t) { on_proof(st, ec3); });
    });
  }

  void on_proof(const PendingPtr& st, boost::system::error_code ec) {
    if (ec || st->settled) return refuse(st);
    ClientProof p;
    if (ClientProof::decode(st->proof, p)) return refuse(st);
    if (!verify(token, st->exchange, Direction::client_to_server, p.proof)) {
      return refuse(st, AckStatus::bad_token);
    }
    asio::async_read(*st->socket, asio::buffer(st->len), [this, st](auto ec2, std::size_t) {
      if (ec2 || st->settled) return refuse(st);
      const std::size_t n = st->len[0] | (std::size_t{st->len[1]} << 8);
      if (n == 0 || n > kMaxAddressBytes) return refuse(st);
      st->address.assign(n, '\0');
      asio::async_read(*st->socket, asio::buffer(st->address), [this, st](auto ec3, std::size_t) {
        if (ec3 || st->settled) return refuse(st);
        if (taken(st->rank)) return refuse(st, AckStatus::bad_rank);
        AdmissionQueue<Pending>::settle(*st);
        {
          std::lock_guard lock(mutex);
          table[static_cast<std::size_t>(st->rank)] = st->address;
        }
        clients.push_back(st->socket);
        GRADEX_DEBUG_LOG("rendezvous store: rank ", st->rank, " registered at ", st->address, " (",
                         registered + 1, " of ", size, ")");
        if (++registered == size) answer_all();
      });
    });
  }

  // Everyone is in: the same table to every rank.
  void answer_all() {
    auto reply = std::make_shared<std::vector<char>>();
    const auto ack = Ack{AckStatus::admitted}.encode();
    for (std::byte b : ack) reply->push_back(static_cast<char>(b));
    for (const std::string& a : table) append_string(*reply, a);
    for (auto& c : clients) {
      asio::async_write(*c, asio::buffer(*reply), [reply, c](auto, std::size_t) {});
    }
    boost::system::error_code ignored;
    acceptor.close(ignored);
  }
};

RendezvousServer::RendezvousServer(const std::string& address, int size, std::string token,
                                   std::chrono::milliseconds timeout)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.size = size;
  m.token = std::move(token);
  m.timeout = timeout;
  m.deadline = std::chrono::steady_clock::now() + timeout;
  m.table.resize(static_cast<std::size_t>(size));
  const auto [host, port] = split_address(address, "GRADEX_RENDEZVOUS");
  boost::system::error_code ec;
  // An address, or a name (srun's node names) resolved as the other ranks
  // will resolve it; binding then tells whether it is this host's.
  ip_tcp::endpoint where;
  const auto ip = asio::ip::make_address(host, ec);
  if (!ec) {
    where = ip_tcp::endpoint(ip, static_cast<unsigned short>(std::stoi(port)));
  } else {
    ip_tcp::resolver resolver(m.io);
    const auto found = resolver.resolve(ip_tcp::v4(), host, port, ec);
    if (ec || found.empty()) {
      throw ConfigError("GRADEX_RENDEZVOUS", "rank 0 hosts the store: cannot resolve '" + host +
                                                 "'" + (ec ? ": " + ec.message() : ""));
    }
    where = found.begin()->endpoint();
  }
  m.acceptor.open(where.protocol(), ec);
  if (!ec) m.acceptor.set_option(ip_tcp::acceptor::reuse_address(true), ec);
  if (!ec) m.acceptor.bind(where, ec);
  if (!ec) m.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw ConfigError("GRADEX_RENDEZVOUS", "cannot listen on " + address + ": " + ec.message());
  m.accept();
  m.thread = std::thread([&m] {
    try {
      // Runs until every reply is written (the io runs out of work) or
      // the deadline passes; ranks that got no table time out themselves.
      m.io.run_until(m.deadline);
    } catch (...) {
    }
  });
}

std::vector<int> RendezvousServer::missing() const {
  std::lock_guard lock(impl_->mutex);
  std::vector<int> out;
  for (std::size_t r = 0; r < impl_->table.size(); ++r) {
    if (impl_->table[r].empty()) out.push_back(static_cast<int>(r));
  }
  return out;
}

std::string local_address_towards(const std::string& server) {
  const auto [host, port] = split_address(server, "GRADEX_RENDEZVOUS");
  asio::io_context io;
  boost::system::error_code ec;
  asio::ip::udp::resolver resolver(io);
  const auto where = resolver.resolve(host, port, ec);
  // A UDP "connect" sends nothing: it only asks the kernel for the route.
  asio::ip::udp::socket s(io);
  if (!ec && !where.empty()) {
    s.open(where.begin()->endpoint().protocol(), ec);
    if (!ec) s.connect(where.begin()->endpoint(), ec);
  }
  const auto local = ec ? asio::ip::udp::endpoint() : s.local_endpoint(ec);
  if (ec || where.empty()) {
    throw ConfigError("GRADEX_ADVERTISE", "no route to the rendezvous " + server +
                                              " to advertise this host by (" + ec.message() +
                                              "): set GRADEX_ADVERTISE");
  }
  return local.address().to_string();
}

std::string never_registered(const std::vector<int>& ranks) {
  if (ranks.empty()) return {};
  std::string list;
  for (int r : ranks) list += (list.empty() ? "" : ", ") + std::to_string(r);
  return (ranks.size() == 1 ? "rank " : "ranks ") + list + " never registered";
}

RendezvousServer::~RendezvousServer() {
  impl_->io.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

namespace {

// Runs one asynchronous operation on `io` to completion or the deadline:
// asio's blocking calls ignore socket timeouts, so nothing here blocks
// without a bound.
template <typename Start>
boost::system::error_code run_bounded(asio::io_context& io, ip_tcp::socket& s,
                                      std::chrono::steady_clock::time_point deadline,
                                      Start start) {
  boost::system::error_code result = asio::error::timed_out;
  bool done = false;
  start([&](boost::system::error_code ec, auto&&...) {
    result = ec;
    done = true;
  });
  io.restart();
  io.run_until(deadline);
  if (!done) {
    boost::system::error_code ignored;
    s.close(ignored);  // cancels the operation; its handler runs below
    io.restart();
    io.run();
    result = asio::error::timed_out;
  }
  return result;
}

}  // namespace

std::vector<std::string> rendezvous(const std::string& server, int rank, int size,
                                    const std::string& token, const std::string& my_address,
                                    std::chrono::milliseconds timeout) {
  const auto [host, port] = split_address(server, "GRADEX_RENDEZVOUS");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  asio::io_context io;
  ip_tcp::resolver resolver(io);
  boost::system::error_code ec;
  const auto where = resolver.resolve(host, port, ec);
  if (ec) throw ConfigError("GRADEX_RENDEZVOUS", "cannot resolve '" + server + "': " + ec.message());
  ip_tcp::socket s(io);
  auto failed = [&](const std::string& doing, boost::system::error_code why) {
    const std::string what = detail::concat("rank ", rank, ": rendezvous at ", server, ": ", doing,
                                            " failed: ", why.message());
    if (why == asio::error::timed_out) {
      throw TimeoutError(detail::concat("rank ", rank, ": rendezvous at ", server,
                                        " timed out after ", timeout.count(), " ms while ", doing,
                                        " (are all ranks started with the same token and "
                                        "world size?)"));
    }
    throw Error(what);
  };
  // The store may not be up yet: retry until the deadline.
  for (;;) {
    ec = run_bounded(io, s, deadline, [&](auto h) { asio::async_connect(s, where, h); });
    if (!ec) break;
    if (std::chrono::steady_clock::now() + std::chrono::milliseconds(50) >= deadline) {
      throw TimeoutError(detail::concat("rank ", rank, ": no rendezvous store at ", server,
                                        " within ", timeout.count(), " ms (", ec.message(), ")"));
    }
    s = ip_tcp::socket(io);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // Hello, challenge (the store proves itself), proof and address, then the
  // table once every rank is in (transport/wire/auth.h).
  Exchange x{random_nonce(), {}, rank, kStoreRank, size};
  const auto hello = Hello{rank, size, x.client_nonce}.encode();
  ec = run_bounded(io, s, deadline, [&](auto h) { asio::async_write(s, asio::buffer(hello), h); });
  if (ec) failed("registering", ec);
  Challenge::Bytes challenge_bytes{};
  ec = run_bounded(io, s, deadline,
                   [&](auto h) { asio::async_read(s, asio::buffer(challenge_bytes), h); });
  if (ec) failed("registering", ec);
  Challenge challenge;
  if (auto bad = Challenge::decode(challenge_bytes, challenge)) {
    throw Error(detail::concat("rank ", rank, ": rendezvous at ", server, " answered with ", *bad));
  }
  if (challenge.status != AckStatus::admitted) {
    throw Error(detail::concat("rank ", rank, ": the rendezvous store at ", server,
                               " refused this rank: ", describe(challenge.status)));
  }
  x.server_nonce = challenge.nonce;
  if (!verify(token, x, Direction::server_to_client, challenge.proof)) {
    throw Error(detail::concat("rank ", rank, ": the rendezvous store at ", server,
                               " could not prove it holds the token: ",
                               describe(AckStatus::bad_token)));
  }
  const auto proof = ClientProof{prove(token, x, Direction::client_to_server)}.encode();
  std::vector<char> msg(reinterpret_cast<const char*>(proof.data()),
                        reinterpret_cast<const char*>(proof.data()) + proof.size());
  append_string(msg, my_address);
  ec = run_bounded(io, s, deadline, [&](auto h) { asio::async_write(s, asio::buffer(msg), h); });
  if (ec) failed("registering", ec);
  Ack::Bytes ack_bytes{};
  ec = run_bounded(io, s, deadline,
                   [&](auto h) { asio::async_read(s, asio::buffer(ack_bytes), h); });
  if (ec) failed("waiting for the other ranks", ec);
  Ack ack;
  if (auto bad = Ack::decode(ack_bytes, ack)) {
    throw Error(detail::concat("rank ", rank, ": rendezvous at ", server, " answered with ", *bad));
  }
  if (ack.status != AckStatus::admitted) {
    throw Error(detail::concat("rank ", rank, ": the rendezvous store at ", server,
                               " refused this rank: ", describe(ack.status)));
  }
  std::vector<std::string> table;
  for (int r = 0; r < size; ++r) {
    std::array<unsigned char, 2> len{};
    ec = run_bounded(io, s, deadline, [&](auto h) { asio::async_read(s, asio::buffer(len), h); });
    const std::size_t n = len[0] | (std::size_t{len[1]} << 8);
    if (ec || n == 0 || n > kMaxAddressBytes) throw Error("rendezvous: malformed address table");
    std::string a(n, '\0');
    ec = run_bounded(io, s, deadline, [&](auto h) { asio::async_read(s, asio::buffer(a), h); });
    if (ec) failed("reading the address table", ec);
    table.push_back(std::move(a));
  }
  return table;
}

}  // namespace gradex::tcp
