#include "transport/zmq/endpoint.h"

#include <sys/eventfd.h>
#include <unistd.h>
#include <zmq.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <optional>

#include "common/clock.h"
#include "common/errors.h"
#include "transport/tcp/mesh.h"
#include "transport/wire/auth.h"
#include "transport/wire/frame.h"
#include "transport/zmq/curve.h"

namespace gradex {

using transport::Early;
using transport::OpPtr;
using transport::Outgoing;
using transport::OutgoingPtr;
using wire::Ack;
using wire::AckStatus;
using wire::FrameHeader;
using wire::FrameKind;
using wire::Hello;

namespace {

// How long a disconnection waits for the peer's abort notice (see
// blame_lost_peers).
constexpr auto kAbortNoticeGrace = std::chrono::milliseconds(250);
// The longest a wait blocks in zmq_poll before it looks at the monitors
// again (see progress()).
constexpr auto kMonitorPeriod = std::chrono::milliseconds(50);
// Payloads up to this size are copied into libzmq's message (the send
// completes at once); longer ones are lent to libzmq (zero-copy) and the
// send completes when libzmq gives the buffer back.
constexpr std::size_t kCopyBytes = std::size_t{64} << 10;

std::string zmq_error(const char* doing) {
  return std::string(doing) + ": " + zmq_strerror(zmq_errno());
}

void set_int(void* socket, int option, int value) { zmq_setsockopt(socket, option, &value, sizeof value); }

// Receives one whole multipart message (up to `max` parts) without waiting.
bool recv_parts(void* socket, std::vector<zmq_msg_t>& parts, std::size_t max) {
  for (auto& p : parts) zmq_msg_close(&p);
  parts.clear();
  int more = 1;
  while (more) {
    parts.emplace_back();
    zmq_msg_init(&parts.back());
    if (zmq_msg_recv(&parts.back(), socket, parts.size() == 1 ? ZMQ_DONTWAIT : 0) < 0) {
      zmq_msg_close(&parts.back());
      parts.pop_back();
      return false;
    }
    more = zmq_msg_more(&parts.back());
    if (parts.size() > max) {  // malformed: drain the rest
      while (more) {
        zmq_msg_t junk;
        zmq_msg_init(&junk);
        zmq_msg_recv(&junk, socket, 0);
        more = zmq_msg_more(&junk);
        zmq_msg_close(&junk);
      }
    }
  }
  return true;
}

// A received payload kept as libzmq delivered it, until a receive copies it
// out (no copy on arrival).
struct ZmqMessage {
  zmq_msg_t msg;
  ZmqMessage() { zmq_msg_init(&msg); }
  ~ZmqMessage() { zmq_msg_close(&msg); }
  ZmqMessage(const ZmqMessage&) = delete;
  ZmqMessage& operator=(const ZmqMessage&) = delete;
};

// What libzmq's I/O thread needs to complete a zero-copy send: the send,
// and the descriptor that wakes the waiting thread.
struct Lent {
  OpPtr op;
  int wake_fd;
};

void returned(void* /*data*/, void* hint) {
  auto* lent = static_cast<Lent*>(hint);
  lent->op->finish();
  const std::uint64_t one = 1;
  (void)!::write(lent->wake_fd, &one, sizeof one);
  delete lent;
}

}  // namespace

// Everything here belongs to the thread that uses the endpoint, except
// the sends lent to libzmq, which its I/O thread completes (an atomic flag,
// then a write to `wake_fd`, which the waiting thread polls too).
struct ZmqEndpoint::Impl {
  ZmqEndpoint& self;
  int rank;
  int size;

  void* ctx = nullptr;
  void* router = nullptr;
  std::vector<void*> dealers;   // per peer
  std::vector<void*> monitors;  // per peer: its DEALER's disconnections
  int wake_fd = -1;
  std::string advertised;
  std::vector<zmq_msg_t> parts;  // the message being read from the ROUTER
  // The ROUTER's routing id of each admitted peer's DEALER. libzmq assigns
  // the ids itself, and one is tied to a rank only once its peer proved it
  // holds the token, so a stranger cannot claim a rank's id.
  std::map<std::string, int> rank_of;
  // When each peer's disconnection was seen, until it is judged.
  std::vector<std::optional<std::chrono::steady_clock::time_point>> lost_at;
  std::vector<zmq_pollitem_t> items;  // progress()'s poll set

  Impl(ZmqEndpoint& s, int r, int n)
      : self(s), rank(r), size(n), dealers(static_cast<std::size_t>(n), nullptr),
        monitors(dealers), lost_at(static_cast<std::size_t>(n)) {}

  ~Impl() {
    for (auto& p : parts) zmq_msg_close(&p);
    shutdown(0);
    // After the context: libzmq gives back every lent buffer by then.
    if (wake_fd >= 0) ::close(wake_fd);
  }

  // A message on the ROUTER from `peer` (already admitted): header + payload.
  void on_frame(int peer) {
    if (parts.size() != 3 || zmq_msg_size(&parts[1]) != FrameHeader::kBytes) {
      return self.fail(peer, detail::concat("rank ", rank, ": malformed message from rank ", peer));
    }
    FrameHeader::Bytes raw;
    std::memcpy(raw.data(), zmq_msg_data(&parts[1]), raw.size());
    FrameHeader h;
    if (auto bad = FrameHeader::decode(raw, self.options().max_message_bytes, h)) {
      return self.fail(peer, detail::concat("rank ", rank, ": bad frame from rank ", peer, ": ", *bad));
    }
    zmq_msg_t& payload = parts[2];
    if (zmq_msg_size(&payload) != h.length) {
      return self.fail(peer, detail::concat("rank ", rank, ": frame from rank ", peer,
                                            " announces ", h.length, " bytes but carries ",
                                            zmq_msg_size(&payload)));
    }
    switch (h.kind) {
      case FrameKind::bye: return self.on_bye(peer);
      case FrameKind::abort:
        return self.on_abort_notice(
            peer, static_cast<int>(h.tag),
            std::string(static_cast<const char*>(zmq_msg_data(&payload)), h.length));
      case FrameKind::data: break;
    }
    if (self.failed()) return;
    auto landing = self.land(peer, h);
    if (landing.receive) return receive_done(*landing.receive, zmq_msg_data(&payload), h.length);
    if (landing.discard) return;
    auto kept = std::make_shared<ZmqMessage>();
    zmq_msg_move(&kept->msg, &payload);
    auto early = std::make_shared<Early>();
    early->data = static_cast<std::byte*>(zmq_msg_data(&kept->msg));
    early->storage = std::move(kept);
    early->bytes = h.length;
    early->arrival = landing.arrival;
    early->complete = true;
    self.keep_early(peer, h.tag, early);
  }

  std::string routing_id() const {
    auto* id = const_cast<zmq_msg_t*>(&parts[0]);
    return std::string(static_cast<const char*>(zmq_msg_data(id)), zmq_msg_size(id));
  }

  // Who sent the message in `parts`, from its routing id; -1 if nobody admitted.
  int sender() const {
    if (parts.empty()) return -1;
    const auto it = rank_of.find(routing_id());
    return it == rank_of.end() ? -1 : it->second;
  }

  // Reads every event the monitor of our DEALER to `p` holds. Draining
  // matters: libzmq signals a socket's descriptor only when its queue
  // turns from empty to non-empty, so an event left unread would let a
  // later one arrive without waking zmq_poll.
  void check_monitor(int p) {
    void* monitor = monitors[static_cast<std::size_t>(p)];
    while (true) {
      zmq_msg_t event;
      zmq_msg_init(&event);
      if (zmq_msg_recv(&event, monitor, ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(&event);
        return;
      }
      std::uint16_t id = 0;
      if (zmq_msg_size(&event) >= 2) std::memcpy(&id, zmq_msg_data(&event), 2);
      const bool more = zmq_msg_more(&event);
      zmq_msg_close(&event);
      if (more) {  // the endpoint address frame
        zmq_msg_t address;
        zmq_msg_init(&address);
        zmq_msg_recv(&address, monitor, ZMQ_DONTWAIT);  // parts arrive together
        zmq_msg_close(&address);
      }
      auto& when = lost_at[static_cast<std::size_t>(p)];
      if (id == ZMQ_EVENT_DISCONNECTED && !when) when = std::chrono::steady_clock::now();
    }
  }

  // A peer that fails on purpose sends an abort notice (naming the root
  // cause) before its sockets close, but the notice travels on the other
  // connection of the pair and may land after the disconnection is seen:
  // give it a moment before blaming the peer itself.
  void blame_lost_peers() {
    const auto now = std::chrono::steady_clock::now();
    for (int p = 0; p < size; ++p) {
      auto& when = lost_at[static_cast<std::size_t>(p)];
      if (!when || now - *when < kAbortNoticeGrace) continue;
      when.reset();
      self.lost(p, "disconnected");
    }
  }

  // Waits (at most until `until`) for the ROUTER, a monitor or a returned
  // zero-copy buffer, and serves what arrived.
  void progress(double until) {
    if (router == nullptr) return;
    items.clear();
    items.push_back({router, 0, ZMQ_POLLIN, 0});
    items.push_back({nullptr, wake_fd, ZMQ_POLLIN, 0});
    for (int p = 0; p < size; ++p) {
      if (void* m = monitors[static_cast<std::size_t>(p)]) items.push_back({m, 0, ZMQ_POLLIN, 0});
    }
    blame_lost_peers();
    // zmq_poll counts milliseconds: a wait shorter than one polls without
    // blocking (the caller loops until its time has come). A long wait
    // still looks at the monitors every kMonitorPeriod: a disconnection
    // event does not always wake zmq_poll (with libzmq 4.3.4 a killed peer
    // went unnoticed until the wait's deadline), while a fresh zmq_poll
    // always checks every socket first.
    long ms = static_cast<long>(std::floor((until - wall_clock().now()) * 1e3));
    ms = std::clamp(ms, 0L, static_cast<long>(kMonitorPeriod.count()));
    if (zmq_poll(items.data(), static_cast<int>(items.size()), ms) <= 0) return;
    if (items[1].revents & ZMQ_POLLIN) {
      std::uint64_t count;
      (void)!::read(wake_fd, &count, sizeof count);
    }
    if (items[0].revents & ZMQ_POLLIN) {
      while (!self.failed() && recv_parts(router, parts, 3)) {
        const int p = sender();
        if (p >= 0) on_frame(p);
      }
    }
    std::size_t i = 2;
    for (int p = 0; p < size; ++p) {
      if (monitors[static_cast<std::size_t>(p)] == nullptr) continue;
      if (items[i++].revents & ZMQ_POLLIN) check_monitor(p);
    }
    blame_lost_peers();
  }

  // Closes every socket (after `linger` ms for queued messages) and the
  // context, which waits until libzmq released every zero-copy buffer.
  void shutdown(int linger_ms) {
    // Monitoring stops before its watcher closes: libzmq's I/O thread
    // would otherwise block for ever sending a disconnection event to a
    // closed watcher, and zmq_ctx_term with it (libzmq issue #3575).
    for (void* d : dealers) {
      if (d != nullptr) zmq_socket_monitor(d, nullptr, 0);
    }
    for (void* d : dealers) {
      if (d == nullptr) continue;
      set_int(d, ZMQ_LINGER, linger_ms);
      zmq_close(d);
    }
    dealers.assign(dealers.size(), nullptr);
    for (void* m : monitors) {
      if (m != nullptr) zmq_close(m);
    }
    monitors.assign(monitors.size(), nullptr);
    if (router != nullptr) {
      set_int(router, ZMQ_LINGER, 0);
      zmq_close(router);
      router = nullptr;
    }
    if (ctx != nullptr) {
      zmq_ctx_term(ctx);
      ctx = nullptr;
    }
  }

  // Header, then payload: copied when small, lent to libzmq when large.
  bool send(void* d, const Outgoing& f, int flags) {
    zmq_msg_t header;
    zmq_msg_init_size(&header, f.header.size());
    std::memcpy(zmq_msg_data(&header), f.header.data(), f.header.size());
    zmq_msg_t payload;
    const bool lend = f.op != nullptr && f.bytes > kCopyBytes;
    if (lend) {
      zmq_msg_init_data(&payload, const_cast<void*>(f.payload), f.bytes, &returned,
                        new Lent{f.op, wake_fd});
    } else {
      zmq_msg_init_size(&payload, f.bytes);
      if (f.bytes > 0) std::memcpy(zmq_msg_data(&payload), f.payload, f.bytes);
    }
    if (zmq_msg_send(&header, d, ZMQ_SNDMORE | flags) < 0 || zmq_msg_send(&payload, d, flags) < 0) {
      zmq_msg_close(&header);
      zmq_msg_close(&payload);  // a lent buffer comes back through returned()
      return false;
    }
    if (!lend && f.op) f.op->finish();
    return true;
  }
};

ZmqEndpoint::ZmqEndpoint(int rank, int size, TransportOptions options)
    : ProcessEndpoint(rank, size, std::move(options)),
      impl_(std::make_unique<Impl>(*this, rank, size)) {
  Impl& m = *impl_;
  const TransportOptions& o = this->options();
  wire::require_token_beyond_loopback(o.bind_host, o.token);
  m.wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  GRADEX_ENFORCE(m.wake_fd >= 0, "eventfd failed: ", std::strerror(errno));
  m.ctx = zmq_ctx_new();
  GRADEX_ENFORCE(m.ctx != nullptr, zmq_error("zmq context"));
  m.router = zmq_socket(m.ctx, ZMQ_ROUTER);
  set_int(m.router, ZMQ_RCVHWM, 0);  // never drop: the schemes bound what is in flight
  const std::int64_t max_size = static_cast<std::int64_t>(
      std::min<std::uint64_t>(o.max_message_bytes, INT64_MAX));
  zmq_setsockopt(m.router, ZMQ_MAXMSGSIZE, &max_size, sizeof max_size);
  // A connection that has not finished ZeroMQ's own handshake by the hello
  // deadline is dropped by libzmq; one without the token cannot finish it
  // (curve.h), so nothing a stranger sends is delivered or allocated.
  set_int(m.router, ZMQ_HANDSHAKE_IVL, static_cast<int>(wire::hello_deadline(o.timeout).count()));
  zmq_security::require_curve();
  zmq_security::make_server(m.router, o.token);
  const std::string where = "tcp://" + o.bind_host + ":" +
                            (o.port == 0 ? "*" : std::to_string(o.port));
  if (zmq_bind(m.router, where.c_str()) != 0) {
    const std::string why = zmq_error(("cannot listen on " + where).c_str());
    m.shutdown(0);
    throw ConfigError("bind address", detail::concat("rank ", rank, ": ", why));
  }
  char last[256] = {};
  std::size_t len = sizeof last;
  zmq_getsockopt(m.router, ZMQ_LAST_ENDPOINT, last, &len);
  const std::string bound(last);
  const std::string shown =
      o.advertise_host.empty() ? o.bind_host : o.advertise_host;
  m.advertised = shown + bound.substr(bound.rfind(':'));
}

namespace {

// The bytes of one message part, if it is exactly a `Record`.
template <typename Record>
std::optional<typename Record::Bytes> as_record(zmq_msg_t& part) {
  if (zmq_msg_size(&part) != Record::kBytes) return std::nullopt;
  typename Record::Bytes raw;
  std::memcpy(raw.data(), zmq_msg_data(&part), raw.size());
  return raw;
}

template <typename Bytes>
void send_to(void* router, const std::string& id, const Bytes& raw) {
  zmq_send(router, id.data(), id.size(), ZMQ_SNDMORE | ZMQ_DONTWAIT);
  zmq_send(router, raw.data(), raw.size(), ZMQ_DONTWAIT);
}

}  // namespace

// Admission (transport/wire/auth.h), over both sockets of each pair: our DEALER
// sends a hello to the peer's ROUTER, which answers with a challenge on the
// same connection; our proof follows, then its ack. A ROUTER ties a routing
// id to a rank only when that proof checks out.
void ZmqEndpoint::connect(const std::vector<std::string>& addresses) {
  Impl& m = *impl_;
  GRADEX_ENFORCE_EQ(static_cast<int>(addresses.size()), m.size, "one address per rank");
  GRADEX_ENFORCE(!connected(), "connect() called twice");
  const TransportOptions& o = options();
  const auto deadline = std::chrono::steady_clock::now() + o.timeout;
  const auto n = static_cast<std::size_t>(m.size);
  std::vector<wire::Exchange> outgoing(n);  // our exchange with each peer's ROUTER
  for (int p = 0; p < m.size; ++p) {
    if (p == m.rank) continue;
    tcp::split_address(addresses[static_cast<std::size_t>(p)], "address of rank " + std::to_string(p));
    void* d = zmq_socket(m.ctx, ZMQ_DEALER);
    set_int(d, ZMQ_SNDHWM, 0);
    set_int(d, ZMQ_LINGER, 0);
    // Only admission records arrive on a DEALER, sealed in CURVE's
    // handshake and message commands (a few hundred bytes).
    const std::int64_t small = 1024;
    zmq_setsockopt(d, ZMQ_MAXMSGSIZE, &small, sizeof small);
    zmq_security::make_client(d, o.token);
    const std::string mon = detail::concat("inproc://gradex-monitor-", m.rank, "-", p);
    zmq_socket_monitor(d, mon.c_str(), ZMQ_EVENT_DISCONNECTED);
    void* watcher = zmq_socket(m.ctx, ZMQ_PAIR);
    zmq_connect(watcher, mon.c_str());
    m.monitors[static_cast<std::size_t>(p)] = watcher;
    m.dealers[static_cast<std::size_t>(p)] = d;
    const std::string target = "tcp://" + addresses[static_cast<std::size_t>(p)];
    if (zmq_connect(d, target.c_str()) != 0) {
      throw ConfigError("address of rank " + std::to_string(p), zmq_error(target.c_str()));
    }
    auto& x = outgoing[static_cast<std::size_t>(p)];
    x = wire::Exchange{wire::random_nonce(), {}, m.rank, p, m.size};
    const auto hello = Hello{m.rank, m.size, x.client_nonce}.encode();
    // Queued on the pipe zmq_connect made; never blocks (a send on a
    // DEALER without a pipe would wait for ever).
    zmq_send(d, hello.data(), hello.size(), ZMQ_DONTWAIT);
  }
  // Challenges we sent, by routing id, oldest first; a stranger's hellos
  // push out only other unproven entries, never an admitted rank.
  struct Challenged {
    std::string id;
    wire::Exchange exchange;
  };
  std::deque<Challenged> challenged;
  std::vector<char> heard(n, 0), acked = heard;
  heard[static_cast<std::size_t>(m.rank)] = acked[static_cast<std::size_t>(m.rank)] = 1;
  std::vector<std::string> rejected;
  auto reject = [&](std::string why) {
    if (rejected.size() < 8) rejected.push_back(std::move(why));
  };
  auto all = [](const std::vector<char>& v) {
    return std::all_of(v.begin(), v.end(), [](char c) { return c != 0; });
  };

  // A message on our ROUTER: a hello, a proof, or an admitted peer's frame.
  auto on_router = [&] {
    if (const int p = m.sender(); p >= 0) return m.on_frame(p);
    if (m.parts.size() != 2) return reject("a message from an unauthenticated peer");
    const std::string id = m.routing_id();
    auto pending = std::find_if(challenged.begin(), challenged.end(),
                                [&](const Challenged& c) { return c.id == id; });
    if (pending != challenged.end()) {
      const auto raw = as_record<wire::ClientProof>(m.parts[1]);
      wire::ClientProof proof;
      const wire::Exchange x = pending->exchange;
      challenged.erase(pending);
      if (!raw || wire::ClientProof::decode(*raw, proof)) return reject("a malformed proof");
      const int claimed = x.client_rank;
      AckStatus status = AckStatus::admitted;
      if (!wire::verify(o.token, x, wire::Direction::client_to_server, proof.proof)) {
        status = AckStatus::bad_token;
      } else if (heard[static_cast<std::size_t>(claimed)]) {
        status = AckStatus::bad_rank;
      }
      send_to(m.router, id, Ack{status}.encode());
      if (status != AckStatus::admitted) {
        return reject(detail::concat("from claimed rank ", claimed, ": ", describe(status)));
      }
      m.rank_of[id] = claimed;
      heard[static_cast<std::size_t>(claimed)] = 1;
      return;
    }
    const auto raw = as_record<Hello>(m.parts[1]);
    Hello h;
    if (!raw) return reject("a message from an unauthenticated peer");
    if (auto bad = Hello::decode(*raw, h)) return reject(*bad);
    wire::Challenge c;
    if (h.size != m.size) {
      c.status = AckStatus::bad_world;
    } else if (h.rank < 0 || h.rank >= m.size || h.rank == m.rank ||
               heard[static_cast<std::size_t>(h.rank)]) {
      c.status = AckStatus::bad_rank;
    } else {
      Challenged entry{id, wire::Exchange{h.nonce, wire::random_nonce(), h.rank, m.rank, m.size}};
      c.nonce = entry.exchange.server_nonce;
      c.proof = wire::prove(o.token, entry.exchange, wire::Direction::server_to_client);
      challenged.push_back(std::move(entry));
      if (challenged.size() > wire::kMaxPendingConnections) challenged.pop_front();
    }
    send_to(m.router, id, c.encode());
    if (c.status != AckStatus::admitted) {
      reject(detail::concat("from claimed rank ", h.rank, ": ", describe(c.status)));
    }
  };

  // A message on our DEALER to `p`: its challenge, then its ack.
  auto on_dealer = [&](int p) {
    void* d = m.dealers[static_cast<std::size_t>(p)];
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    if (zmq_msg_recv(&msg, d, ZMQ_DONTWAIT) < 0) return zmq_msg_close(&msg), false;
    const auto challenge = as_record<wire::Challenge>(msg);
    const auto ack_raw = as_record<Ack>(msg);
    zmq_msg_close(&msg);
    const std::string who = detail::concat("rank ", m.rank, ": rank ", p);
    auto& x = outgoing[static_cast<std::size_t>(p)];
    if (challenge) {
      wire::Challenge c;
      if (auto bad = wire::Challenge::decode(*challenge, c)) {
        throw Error(detail::concat(who, " answered with ", *bad));
      }
      if (c.status != AckStatus::admitted) {
        throw Error(detail::concat(who, " refused the connection: ", describe(c.status)));
      }
      x.server_nonce = c.nonce;
      if (!wire::verify(o.token, x, wire::Direction::server_to_client, c.proof)) {
        throw Error(detail::concat(who, " could not prove it holds the token: ",
                                   describe(AckStatus::bad_token)));
      }
      const auto proof =
          wire::ClientProof{wire::prove(o.token, x, wire::Direction::client_to_server)}.encode();
      zmq_send(d, proof.data(), proof.size(), ZMQ_DONTWAIT);
    } else if (ack_raw) {
      Ack ack;
      if (auto bad = Ack::decode(*ack_raw, ack)) {
        throw Error(detail::concat(who, " answered with ", *bad));
      }
      if (ack.status != AckStatus::admitted) {
        throw Error(detail::concat(who, " refused the connection: ", describe(ack.status)));
      }
      acked[static_cast<std::size_t>(p)] = 1;
    }
    return true;
  };

  std::vector<zmq_pollitem_t> items{{m.router, 0, ZMQ_POLLIN, 0}};
  for (int p = 0; p < m.size; ++p) {
    if (p != m.rank) items.push_back({m.dealers[static_cast<std::size_t>(p)], 0, ZMQ_POLLIN, 0});
  }
  while (!(all(heard) && all(acked)) && std::chrono::steady_clock::now() < deadline) {
    if (zmq_poll(items.data(), static_cast<int>(items.size()), 20) <= 0) continue;
    while (recv_parts(m.router, m.parts, 3)) on_router();
    for (int p = 0; p < m.size; ++p) {
      if (p != m.rank) {
        while (on_dealer(p)) {
        }
      }
    }
  }
  if (!(all(heard) && all(acked))) {
    std::string missing;
    for (int p = 0; p < m.size; ++p) {
      if (!heard[static_cast<std::size_t>(p)] || !acked[static_cast<std::size_t>(p)]) {
        missing += (missing.empty() ? "" : ", ") + std::to_string(p);
      }
    }
    std::string why = detail::concat("rank ", m.rank,
                                     ": timed out connecting the group; no admission with "
                                     "rank(s) ",
                                     missing);
    for (const auto& r : rejected) why += "; refused a connection: " + r;
    // A peer keyed by another token fails CURVE's handshake inside libzmq,
    // which tells neither side why: the likeliest cause goes in the text.
    why += " (a rank started with another GRADEX_TOKEN cannot finish ZeroMQ's CURVE handshake: "
           "token mismatch?)";
    throw TimeoutError(why);
  }
  mark_connected();
}


ZmqEndpoint::~ZmqEndpoint() {
  abort(rank(), detail::concat("rank ", rank(), " left without closing its endpoint"));
}

std::string ZmqEndpoint::address() const { return impl_->advertised; }

void ZmqEndpoint::write(const OutgoingPtr& frame) {
  void* d = impl_->dealers[static_cast<std::size_t>(frame->peer)];
  if (d == nullptr) return;
  // The DEALER's queue is unbounded (ZMQ_SNDHWM 0), so a send fails only
  // when libzmq dropped the pipe (a protocol error on the connection):
  // without ZMQ_DONTWAIT it would then block for ever.
  if (!impl_->send(d, *frame, ZMQ_DONTWAIT)) {
    fail(rank(), detail::concat("rank ", rank(), ": cannot send to rank ", frame->peer, ": ",
                                zmq_error("send")));
  }
}

void ZmqEndpoint::progress(double until) { impl_->progress(until); }

// libzmq holds what is queued and sends it while the sockets linger.
bool ZmqEndpoint::flushed() const { return true; }

void ZmqEndpoint::notify(int peer, const Outgoing& frame) noexcept {
  void* d = impl_->dealers[static_cast<std::size_t>(peer)];
  if (d != nullptr) impl_->send(d, frame, ZMQ_DONTWAIT);
}

void ZmqEndpoint::disconnect(bool orderly) noexcept {
  // Goodbyes and abort notices may still be queued: give them a moment.
  impl_->shutdown(orderly ? 1000 : 200);
}

}  // namespace gradex

// libzmq is not built with ThreadSanitizer: it hands messages between its
// threads through lock-free queues whose ordering TSan cannot see, so race
// reports inside it are false positives. TSan reads this hook at start-up;
// other builds never call it.
extern "C" const char* __tsan_default_suppressions() { return "race:libzmq.so\n"; }
