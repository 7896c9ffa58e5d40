#include "transport/tcp/mesh.h"

#include <set>

#include "common/debug_log.h"
#include "common/errors.h"
#include "transport/wire/admission_queue.h"
#include "transport/wire/frame.h"

namespace gradex::tcp {

// The wire format and admission handshake (transport/wire/) speak for both
// the mesh and the rendezvous store.
using namespace wire;

namespace asio = boost::asio;
using ip_tcp = asio::ip::tcp;

std::pair<std::string, std::string> split_address(const std::string& address,
                                                  const std::string& field) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) {
    throw ConfigError(field, "expected host:port, got '" + address + "'");
  }
  const std::string port = address.substr(colon + 1);
  for (char c : port) {
    if (c < '0' || c > '9') throw ConfigError(field, "port of '" + address + "' is not a number");
  }
  if (port.size() > 5 || std::stoi(port) > 65535) {
    throw ConfigError(field, "port of '" + address + "' is out of range");
  }
  return {address.substr(0, colon), port};
}

namespace {

// All of the mesh's asynchronous state; lives on the stack of build_mesh
// while the io_context runs on the same thread, so handlers never outlive it.
class MeshBuilder {
 public:
  MeshBuilder(asio::io_context& io, ip_tcp::acceptor& acceptor, const MeshRequest& req)
      : io_(io), acceptor_(acceptor), req_(req),
        sockets_(static_cast<std::size_t>(req.size)) {
    remaining_ = req.size - 1;
    for (int p = 0; p < req.rank; ++p) connect(p);
    if (req.rank + 1 < req.size) accept();
    if (remaining_ == 0) io_.stop();
  }

  std::vector<std::unique_ptr<Socket>> finish() {
    if (!fatal_.empty()) throw Error(fatal_);
    if (remaining_ > 0) {
      std::string missing;
      for (int p = 0; p < req_.size; ++p) {
        if (p != req_.rank && !sockets_[static_cast<std::size_t>(p)]) {
          missing += (missing.empty() ? "" : ", ") + std::to_string(p);
        }
      }
      std::string why = detail::concat("rank ", req_.rank,
                                       ": timed out connecting the group; no connection with "
                                       "rank(s) ",
                                       missing);
      for (const auto& r : rejected_) why += "; refused a connection: " + r;
      if (rejected_count_ > rejected_.size()) {
        why += detail::concat("; and ", rejected_count_ - rejected_.size(), " more");
      }
      throw TimeoutError(why);
    }
    return std::move(sockets_);
  }

 private:
  // One connection being admitted, in either direction.
  struct Pending {
    std::unique_ptr<Socket> socket;
    Hello::Bytes hello{};
    Challenge::Bytes challenge{};
    ClientProof::Bytes proof{};
    Ack::Bytes ack{};
    Exchange exchange;
    ip_tcp::resolver resolver;
    asio::steady_timer timer;  // connecting: the retry pause; accepting: the hello deadline
    bool settled = false;      // accepting: admitted or turned away
    explicit Pending(asio::io_context& io)
        : socket(std::make_unique<Socket>(io)), resolver(io), timer(io) {}
  };
  using PendingPtr = std::shared_ptr<Pending>;

  void arrived(int peer, std::unique_ptr<Socket> s) {
    s->set_option(ip_tcp::no_delay(true));
    GRADEX_DEBUG_LOG("rank ", req_.rank, ": connected to rank ", peer, " (", remaining_ - 1,
                     " to go)");
    sockets_[static_cast<std::size_t>(peer)] = std::move(s);
    if (--remaining_ == 0) io_.stop();
  }

  void fail(std::string why) {
    if (fatal_.empty()) fatal_ = std::move(why);
    io_.stop();
  }

  // ---- connecting to a lower rank -------------------------------------------

  // Connects to a lower rank, retrying until the deadline: its listener is
  // up before its address is known, but a remote host may still be booting.
  void connect(int peer) {
    auto st = std::make_shared<Pending>(io_);
    const std::string& address = req_.addresses[static_cast<std::size_t>(peer)];
    const auto [host, port] = split_address(address, "address of rank " + std::to_string(peer));
    st->resolver.async_resolve(
        host, port, [this, st, peer, address](boost::system::error_code ec,
                                              ip_tcp::resolver::results_type results) {
          if (ec) return fail(detail::concat("rank ", req_.rank, ": cannot resolve rank ", peer,
                                             "'s address ", address, ": ", ec.message()));
          asio::async_connect(*st->socket, results,
                              [this, st, peer](boost::system::error_code ec2, const ip_tcp::endpoint&) {
                                if (ec2) return retry(peer, st);
                                hello(peer, st);
                              });
        });
  }

  void retry(int peer, const PendingPtr& st) {
    if (std::chrono::steady_clock::now() >= req_.deadline) return;
    st->timer.expires_after(std::chrono::milliseconds(50));
    st->timer.async_wait([this, peer](boost::system::error_code ec) {
      if (!ec) connect(peer);
    });
  }

  std::string from(int peer) const {
    return detail::concat("rank ", req_.rank, ": rank ", peer);
  }

  // Hello out, challenge in: the server proves itself first, so a stranger
  // at the address learns nothing it could replay elsewhere.
  void hello(int peer, const PendingPtr& st) {
    st->exchange = Exchange{random_nonce(), {}, req_.rank, peer, req_.size};
    st->hello = Hello{req_.rank, req_.size, st->exchange.client_nonce}.encode();
    asio::async_write(*st->socket, asio::buffer(st->hello), [this, st, peer](auto ec, std::size_t) {
      if (ec) return retry(peer, st);
      asio::async_read(*st->socket, asio::buffer(st->challenge),
                       [this, st, peer](auto ec2, std::size_t) { on_challenge(peer, st, ec2); });
    });
  }

  void on_challenge(int peer, const PendingPtr& st, boost::system::error_code ec) {
    if (ec) {
      return fail(detail::concat(from(peer), " closed the connection during admission (",
                                 ec.message(), ")"));
    }
    Challenge c;
    if (auto bad = Challenge::decode(st->challenge, c)) {
      return fail(detail::concat(from(peer), " answered with ", *bad));
    }
    if (c.status != AckStatus::admitted) {
      return fail(detail::concat(from(peer), " refused the connection: ", describe(c.status)));
    }
    st->exchange.server_nonce = c.nonce;
    if (!verify(req_.token, st->exchange, Direction::server_to_client, c.proof)) {
      return fail(detail::concat(from(peer), " could not prove it holds the token: ",
                                 describe(AckStatus::bad_token)));
    }
    st->proof = ClientProof{prove(req_.token, st->exchange, Direction::client_to_server)}.encode();
    asio::async_write(*st->socket, asio::buffer(st->proof), [this, st, peer](auto ec2, std::size_t) {
      if (ec2) return fail(detail::concat(from(peer), " vanished during admission"));
      asio::async_read(*st->socket, asio::buffer(st->ack), [this, st, peer](auto ec3, std::size_t) {
        if (ec3) {
          return fail(detail::concat(from(peer), " closed the connection during admission (",
                                     ec3.message(), ")"));
        }
        Ack ack;
        if (auto bad = Ack::decode(st->ack, ack)) {
          return fail(detail::concat(from(peer), " answered with ", *bad));
        }
        if (ack.status != AckStatus::admitted) {
          return fail(detail::concat(from(peer), " refused the connection: ", describe(ack.status)));
        }
        arrived(peer, std::move(st->socket));
      });
    });
  }

  // ---- admitting a higher rank ----------------------------------------------

  void accept() {
    auto st = std::make_shared<Pending>(io_);
    acceptor_.async_accept(*st->socket, [this, st](boost::system::error_code ec) {
      if (ec == asio::error::operation_aborted) return;  // acceptor closed
      if (ec) {
        // Out of descriptors or a connection reset before it was taken:
        // try again shortly (dropped connections free descriptors).
        accept_pause_.expires_after(std::chrono::milliseconds(10));
        accept_pause_.async_wait([this](boost::system::error_code e) {
          if (!e && remaining_ > 0) accept();
        });
        return;
      }
      watch(st);
      asio::async_read(*st->socket, asio::buffer(st->hello),
                       [this, st](auto ec2, std::size_t) { on_hello(st, ec2); });
      if (remaining_ > 0) accept();
    });
  }

  // Bounds what an unauthenticated connection may hold (transport/wire/admission_queue.h).
  void watch(const PendingPtr& st) {
    pending_.watch(st, hello_deadline(req_.timeout),
                   [this](const PendingPtr& p, const char* why) { reject(p, why); });
  }

  void on_hello(const PendingPtr& st, boost::system::error_code ec) {
    if (st->settled) return;
    if (ec) return reject(st, "closed before its hello (" + ec.message() + ")");
    Hello h;
    if (auto bad = Hello::decode(st->hello, h)) return reject(st, *bad);
    Challenge c;
    if (h.size != req_.size) {
      c.status = AckStatus::bad_world;
    } else if (h.rank <= req_.rank || h.rank >= req_.size ||
               sockets_[static_cast<std::size_t>(h.rank)]) {
      c.status = AckStatus::bad_rank;
    } else {
      st->exchange = Exchange{h.nonce, random_nonce(), h.rank, req_.rank, req_.size};
      c.nonce = st->exchange.server_nonce;
      c.proof = prove(req_.token, st->exchange, Direction::server_to_client);
    }
    st->challenge = c.encode();
    asio::async_write(*st->socket, asio::buffer(st->challenge),
                      [this, st, h, status = c.status](auto ec2, std::size_t) {
                        if (status != AckStatus::admitted) {
                          return reject(st, detail::concat("from claimed rank ", h.rank, ": ",
                                                           describe(status)));
                        }
                        if (ec2) return reject(st, detail::concat("claimed rank ", h.rank, " vanished"));
                        asio::async_read(*st->socket, asio::buffer(st->proof),
                                         [this, st, h](auto ec3, std::size_t) {
                                           on_proof(st, h.rank, ec3);
                                         });
                      });
  }

  void on_proof(const PendingPtr& st, int claimed, boost::system::error_code ec) {
    if (st->settled) return;
    if (ec) return reject(st, detail::concat("claimed rank ", claimed, " closed before its proof"));
    ClientProof p;
    if (auto bad = ClientProof::decode(st->proof, p)) return reject(st, *bad);
    AckStatus status = AckStatus::admitted;
    if (!verify(req_.token, st->exchange, Direction::client_to_server, p.proof)) {
      status = AckStatus::bad_token;
    } else if (sockets_[static_cast<std::size_t>(claimed)]) {
      status = AckStatus::bad_rank;
    }
    st->ack = Ack{status}.encode();
    asio::async_write(*st->socket, asio::buffer(st->ack),
                      [this, st, claimed, status](auto ec2, std::size_t) {
                        if (st->settled) return;
                        if (status != AckStatus::admitted) {
                          return reject(st, detail::concat("from claimed rank ", claimed, ": ",
                                                           describe(status)));
                        }
                        if (ec2) return reject(st, detail::concat("rank ", claimed, " vanished"));
                        if (sockets_[static_cast<std::size_t>(claimed)]) {
                          return reject(st, detail::concat("duplicate rank ", claimed));
                        }
                        settle(st);
                        arrived(claimed, std::move(st->socket));
                      });
  }

  static void settle(const PendingPtr& st) { AdmissionQueue<Pending>::settle(*st); }

  void reject(const PendingPtr& st, std::string why) {
    if (st->settled) return;
    settle(st);
    boost::system::error_code ignored;
    st->socket->close(ignored);
    ++rejected_count_;
    if (rejected_.size() < 8) rejected_.push_back(std::move(why));
  }

  asio::io_context& io_;
  ip_tcp::acceptor& acceptor_;
  const MeshRequest& req_;
  std::vector<std::unique_ptr<Socket>> sockets_;
  int remaining_ = 0;
  std::string fatal_;
  std::vector<std::string> rejected_;
  std::size_t rejected_count_ = 0;
  AdmissionQueue<Pending> pending_;  // accepted, not yet admitted
  asio::steady_timer accept_pause_{io_};
};

}  // namespace

std::vector<std::unique_ptr<Socket>> build_mesh(asio::io_context& io, ip_tcp::acceptor& acceptor,
                                                const MeshRequest& request) {
  GRADEX_ENFORCE_EQ(static_cast<int>(request.addresses.size()), request.size,
                    "one address per rank");
  std::vector<std::unique_ptr<Socket>> result;
  {
    io.restart();
    MeshBuilder builder(io, acceptor, request);
    io.run_until(request.deadline);
    boost::system::error_code ignored;
    acceptor.close(ignored);
    result = builder.finish();
  }
  return result;
}

}  // namespace gradex::tcp
