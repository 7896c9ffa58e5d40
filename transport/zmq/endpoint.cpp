#include "transport/zmq/endpoint.h"

#include <zmq.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <mutex>
#include <thread>

#include "common/clock.h"
#include "common/errors.h"
#include "transport/port_shaper.h"
#include "transport/wire/auth.h"
#include "transport/wire/frame.h"
#include "transport/tcp/mesh.h"
#include "transport/zmq/curve.h"

namespace gradex {

using wire::Ack;
using wire::AckStatus;
using wire::FrameHeader;
using wire::FrameKind;
using wire::Hello;

namespace {

enum class OpKind { send, recv, recv_reduce };

// How long a disconnection waits for the peer's abort notice (see
// blame_lost_peers); the receiving thread polls at 50 ms.
constexpr auto kAbortNoticeGrace = std::chrono::milliseconds(250);

struct Op final : RequestState {
  OpKind kind = OpKind::send;
  int peer = 0;
  Tag tag = 0;
  void* dst = nullptr;
  std::size_t bytes = 0;
  Tensor reduce_dst;
  ReduceOp rop = ReduceOp::sum;
  double not_before = 0;
  // Guarded by Impl::mutex.
  bool done = false;
  std::string error;
};
using OpPtr = std::shared_ptr<Op>;

// A received message whose receive is not posted yet: libzmq's memory,
// kept as is until the receive copies it out.
struct Early {
  zmq_msg_t msg;
  double arrival = 0;
  Early() { zmq_msg_init(&msg); }
  ~Early() { zmq_msg_close(&msg); }
  Early(const Early&) = delete;
  Early& operator=(const Early&) = delete;
  std::size_t bytes() { return zmq_msg_size(&msg); }
  const void* data() { return zmq_msg_data(&msg); }
};
using EarlyPtr = std::shared_ptr<Early>;

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

}  // namespace

struct ZmqEndpoint::Impl {
  int rank;
  int size;
  EndpointOptions options;
  std::optional<PortShaper> shaper;

  void* ctx = nullptr;
  void* router = nullptr;
  std::vector<void*> dealers;   // per peer; used by the rank's own thread
  std::vector<void*> monitors;  // per peer; used by the receiving thread
  std::string advertised;
  std::thread io_thread;
  std::atomic<bool> stopping{false};
  std::vector<zmq_msg_t> parts;  // receiving thread's scratch
  // The ROUTER's routing id of each admitted peer's DEALER. libzmq assigns
  // the ids itself, and one is tied to a rank only once its peer proved it
  // holds the token, so a stranger cannot claim a rank's id. Written by
  // connect() before the receiving thread starts, read-only afterwards.
  std::map<std::string, int> rank_of;
  // When each peer's disconnection was seen (receiving thread only).
  std::vector<std::optional<std::chrono::steady_clock::time_point>> lost_at;

  std::mutex mutex;
  std::condition_variable cv;
  using Key = std::pair<int, Tag>;
  std::map<Key, std::deque<OpPtr>> posted;
  std::map<Key, std::deque<EarlyPtr>> early;
  std::vector<char> said_bye;
  bool failed = false;
  int failed_peer = -1;
  std::string failure;
  bool closed = false;

  Impl(int r, int n, EndpointOptions o) : rank(r), size(n), options(std::move(o)) {}

  ~Impl() {
    for (auto& p : parts) zmq_msg_close(&p);
  }

  void complete(Op& op, std::string error = {}) {
    {
      std::lock_guard lock(mutex);
      op.error = std::move(error);
      op.done = true;
    }
    cv.notify_all();
  }

  void fail(int peer, const std::string& why) {
    {
      std::lock_guard lock(mutex);
      if (failed) return;
      failed = true;
      failed_peer = peer;
      failure = why;
    }
    cv.notify_all();
  }

  // libzmq places a received payload wherever its buffer has room, so it
  // may not be aligned for the element type: such payloads are combined
  // through an aligned bounce buffer, a cache-sized chunk at a time.
  static void reduce_unaligned(const Tensor& dst, const void* src, ReduceOp op) {
    const std::size_t elem = dtype_size(dst.dtype);
    if (reinterpret_cast<std::uintptr_t>(src) % elem == 0) {
      return reduce_into(dst.data, src, dst.count, dst.dtype, op);
    }
    constexpr std::size_t kChunkElems = 64 * 1024;
    std::vector<std::byte> bounce(std::min(dst.count, kChunkElems) * elem);
    for (std::size_t done = 0; done < dst.count; done += kChunkElems) {
      const std::size_t n = std::min(kChunkElems, dst.count - done);
      std::memcpy(bounce.data(), static_cast<const std::byte*>(src) + done * elem, n * elem);
      reduce_into(static_cast<std::byte*>(dst.data) + done * elem, bounce.data(), n, dst.dtype, op);
    }
  }

  // Under `mutex`: copies or combines a message into a receive.
  static void deliver(Op& op, const void* data, std::size_t bytes, double arrival) {
    if (op.bytes != bytes) {
      op.error = detail::concat("message size mismatch: rank ", op.peer, " sent ", bytes,
                                " bytes, the receive expected ", op.bytes, " (tag ", op.tag, ")");
    } else if (op.kind == OpKind::recv_reduce) {
      reduce_unaligned(op.reduce_dst, data, op.rop);
    } else if (bytes > 0) {
      std::memcpy(op.dst, data, bytes);
    }
    op.not_before = std::max(op.not_before, arrival);
    op.done = true;
  }

  // A message on the ROUTER from `peer` (already admitted): header + payload.
  void on_frame(int peer) {
    if (parts.size() != 3 || zmq_msg_size(&parts[1]) != FrameHeader::kBytes) {
      return fail(peer, detail::concat("rank ", rank, ": malformed message from rank ", peer));
    }
    FrameHeader::Bytes raw;
    std::memcpy(raw.data(), zmq_msg_data(&parts[1]), raw.size());
    FrameHeader h;
    if (auto bad = FrameHeader::decode(raw, options.max_message_bytes, h)) {
      return fail(peer, detail::concat("rank ", rank, ": bad frame from rank ", peer, ": ", *bad));
    }
    zmq_msg_t& payload = parts[2];
    if (zmq_msg_size(&payload) != h.length) {
      return fail(peer, detail::concat("rank ", rank, ": frame from rank ", peer,
                                       " announces ", h.length, " bytes but carries ",
                                       zmq_msg_size(&payload)));
    }
    switch (h.kind) {
      case FrameKind::bye: {
        {
          std::lock_guard lock(mutex);
          said_bye[static_cast<std::size_t>(peer)] = 1;
        }
        cv.notify_all();
        return;
      }
      case FrameKind::abort: {
        const std::string why(static_cast<const char*>(zmq_msg_data(&payload)), h.length);
        const int who = static_cast<int>(h.tag);
        return fail(who, detail::concat("rank ", rank, ": rank ", who, " failed (reported by rank ",
                                        peer, "): ", why));
      }
      case FrameKind::data: break;
    }
    bool woke = false;
    {
      std::lock_guard lock(mutex);
      if (failed) return;
      const double arrival = shaper ? shaper->ingress(peer, h.length, h.egress_start) : 0.0;
      auto it = posted.find({peer, h.tag});
      if (it != posted.end()) {
        OpPtr op = std::move(it->second.front());
        it->second.pop_front();
        if (it->second.empty()) posted.erase(it);
        deliver(*op, zmq_msg_data(&payload), h.length, arrival);
        woke = true;
      } else {
        auto e = std::make_shared<Early>();
        zmq_msg_move(&e->msg, &payload);
        e->arrival = arrival;
        early[{peer, h.tag}].push_back(std::move(e));
      }
    }
    if (woke) cv.notify_all();
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

  void check_monitor(int p) {
    zmq_msg_t event;
    zmq_msg_init(&event);
    if (zmq_msg_recv(&event, monitors[static_cast<std::size_t>(p)], ZMQ_DONTWAIT) < 0) {
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
      zmq_msg_recv(&address, monitors[static_cast<std::size_t>(p)], 0);
      zmq_msg_close(&address);
    }
    if (id != ZMQ_EVENT_DISCONNECTED) return;
    auto& when = lost_at[static_cast<std::size_t>(p)];
    if (!when) when = std::chrono::steady_clock::now();
  }

  // A peer that fails on purpose sends an abort notice (naming the root
  // cause) before its sockets close, but the notice travels on the other
  // connection of the pair and may land after the disconnection is seen:
  // give it a moment before blaming the peer itself.
  void blame_lost_peers() {
    const auto now = std::chrono::steady_clock::now();
    for (int p = 0; p < size; ++p) {
      const auto& when = lost_at[static_cast<std::size_t>(p)];
      if (!when || now - *when < kAbortNoticeGrace) continue;
      {
        std::lock_guard lock(mutex);
        if (said_bye[static_cast<std::size_t>(p)] || closed) continue;
      }
      fail(p, detail::concat("rank ", rank, ": connection to rank ", p, " lost (disconnected)"));
    }
  }

  // The receiving thread: polls the ROUTER and the monitors. The short
  // poll period only bounds how fast it notices `stopping`.
  void io_loop() {
    std::vector<zmq_pollitem_t> items;
    items.push_back({router, 0, ZMQ_POLLIN, 0});
    for (int p = 0; p < size; ++p) {
      if (p != rank) items.push_back({monitors[static_cast<std::size_t>(p)], 0, ZMQ_POLLIN, 0});
    }
    while (!stopping.load()) {
      if (zmq_poll(items.data(), static_cast<int>(items.size()), 50) < 0) {
        if (zmq_errno() == EINTR) continue;
        return fail(rank, zmq_error("poll"));
      }
      if (items[0].revents & ZMQ_POLLIN) {
        while (recv_parts(router, parts, 3)) {
          const int p = sender();
          if (p >= 0) on_frame(p);
        }
      }
      std::size_t i = 1;
      for (int p = 0; p < size; ++p) {
        if (p == rank) continue;
        if (items[i++].revents & ZMQ_POLLIN) check_monitor(p);
      }
      blame_lost_peers();
    }
  }

  void stop_io() {
    stopping.store(true);
    if (io_thread.joinable()) io_thread.join();
  }

  // Closes every socket (after `linger` ms for queued messages) and the
  // context, which waits until libzmq released every zero-copy buffer.
  void shutdown(int linger_ms) {
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

  void send_control(int p, FrameKind kind, Tag tag, const std::string& payload) {
    void* d = dealers[static_cast<std::size_t>(p)];
    if (d == nullptr) return;
    FrameHeader h;
    h.kind = kind;
    h.tag = tag;
    h.length = payload.size();
    const auto raw = h.encode();
    zmq_send(d, raw.data(), raw.size(), ZMQ_SNDMORE | ZMQ_DONTWAIT);
    zmq_send(d, payload.data(), payload.size(), ZMQ_DONTWAIT);
  }
};

ZmqEndpoint::ZmqEndpoint(int rank, int size, EndpointOptions options)
    : impl_(std::make_unique<Impl>(rank, size, std::move(options))) {
  GRADEX_ENFORCE(size >= 1 && rank >= 0 && rank < size, "rank ", rank, " of ", size);
  Impl& m = *impl_;
  wire::require_token_beyond_loopback(m.options.bind_host, m.options.token);
  if (m.options.shaping && m.options.shaping->shaped()) {
    GRADEX_ENFORCE_EQ(m.options.shaping->endpoints(), size, "shaping topology size");
    m.shaper.emplace(*m.options.shaping, rank);
  }
  m.said_bye.assign(static_cast<std::size_t>(size), 0);
  m.lost_at.resize(static_cast<std::size_t>(size));
  m.dealers.assign(static_cast<std::size_t>(size), nullptr);
  m.monitors.assign(static_cast<std::size_t>(size), nullptr);
  m.ctx = zmq_ctx_new();
  GRADEX_ENFORCE(m.ctx != nullptr, zmq_error("zmq context"));
  m.router = zmq_socket(m.ctx, ZMQ_ROUTER);
  set_int(m.router, ZMQ_RCVHWM, 0);  // never drop: the schemes bound what is in flight
  const std::int64_t max_size = static_cast<std::int64_t>(
      std::min<std::uint64_t>(m.options.max_message_bytes, INT64_MAX));
  zmq_setsockopt(m.router, ZMQ_MAXMSGSIZE, &max_size, sizeof max_size);
  // A connection that has not finished ZeroMQ's own handshake by the hello
  // deadline is dropped by libzmq; one without the token cannot finish it
  // (curve.h), so nothing a stranger sends is delivered or allocated.
  set_int(m.router, ZMQ_HANDSHAKE_IVL, static_cast<int>(wire::hello_deadline(m.options.timeout).count()));
  zmq_security::require_curve();
  zmq_security::make_server(m.router, m.options.token);
  const std::string where = "tcp://" + m.options.bind_host + ":" +
                            (m.options.port == 0 ? "*" : std::to_string(m.options.port));
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
      m.options.advertise_host.empty() ? m.options.bind_host : m.options.advertise_host;
  m.advertised = shown + bound.substr(bound.rfind(':'));
}

ZmqEndpoint::~ZmqEndpoint() {
  abort(impl_->rank, detail::concat("rank ", impl_->rank, " left without closing its endpoint"));
}

std::string ZmqEndpoint::address() const { return impl_->advertised; }
int ZmqEndpoint::rank() const { return impl_->rank; }
int ZmqEndpoint::size() const { return impl_->size; }
Clock& ZmqEndpoint::clock() { return wall_clock(); }
std::chrono::milliseconds ZmqEndpoint::timeout() const { return impl_->options.timeout; }

void ZmqEndpoint::set_shaping(const std::optional<Topology>& topology) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  m.shaper.reset();
  if (topology && topology->shaped()) {
    GRADEX_ENFORCE_EQ(topology->endpoints(), m.size, "shaping topology size");
    m.shaper.emplace(*topology, m.rank);
  }
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
  GRADEX_ENFORCE(!m.io_thread.joinable(), "connect() called twice");
  const auto deadline = std::chrono::steady_clock::now() + m.options.timeout;
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
    zmq_security::make_client(d, m.options.token);
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
    zmq_send(d, hello.data(), hello.size(), 0);
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
      if (!wire::verify(m.options.token, x, wire::Direction::client_to_server, proof.proof)) {
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
      c.proof = wire::prove(m.options.token, entry.exchange, wire::Direction::server_to_client);
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
      if (!wire::verify(m.options.token, x, wire::Direction::server_to_client, c.proof)) {
        throw Error(detail::concat(who, " could not prove it holds the token: ",
                                   describe(AckStatus::bad_token)));
      }
      const auto proof =
          wire::ClientProof{wire::prove(m.options.token, x, wire::Direction::client_to_server)}.encode();
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
  m.io_thread = std::thread([&m] { m.io_loop(); });
}

void ZmqEndpoint::close() {
  Impl& m = *impl_;
  int failed_rank = -1;
  std::string failure;
  {
    std::lock_guard lock(m.mutex);
    if (m.closed) return;
    if (m.failed) {
      failed_rank = m.failed_peer;
      failure = m.failure;
    }
  }
  if (failed_rank >= 0) return abort(failed_rank, failure);
  if (!m.io_thread.joinable()) {
    {
      std::lock_guard lock(m.mutex);
      m.closed = true;
    }
    m.shutdown(0);
    return;
  }
  for (int p = 0; p < m.size; ++p) {
    if (p != m.rank) m.send_control(p, FrameKind::bye, 0, "");
  }
  {
    std::unique_lock lock(m.mutex);
    m.cv.wait_until(lock, std::chrono::steady_clock::now() + m.options.timeout, [&] {
      if (m.failed) return true;
      for (int p = 0; p < m.size; ++p) {
        if (p != m.rank && !m.said_bye[static_cast<std::size_t>(p)]) return false;
      }
      return true;
    });
    m.closed = true;
  }
  m.stop_io();
  m.shutdown(1000);  // our goodbyes may still be queued
}

void ZmqEndpoint::abort(int failed_rank, const std::string& why) noexcept {
  Impl& m = *impl_;
  try {
    m.fail(failed_rank, why);
    {
      std::lock_guard lock(m.mutex);
      if (m.closed) return;
      m.closed = true;
    }
    m.stop_io();
    const std::string reason = why.substr(0, wire::kMaxReasonBytes);
    for (int p = 0; p < m.size; ++p) {
      if (p != m.rank && p != failed_rank) {
        m.send_control(p, FrameKind::abort, static_cast<Tag>(failed_rank), reason);
      }
    }
    m.shutdown(200);
  } catch (...) {
  }
}

namespace {
struct SendHint {
  ZmqEndpoint::Impl* impl;
  OpPtr op;
};
}  // namespace

std::shared_ptr<RequestState> ZmqEndpoint::start_send(int peer, const void* data,
                                                      std::size_t bytes, Tag tag) {
  Impl& m = *impl_;
  auto op = std::make_shared<Op>();
  op->kind = OpKind::send;
  op->peer = peer;
  op->tag = tag;
  op->bytes = bytes;
  if (peer == m.rank) {
    std::lock_guard lock(m.mutex);
    auto e = std::make_shared<Early>();
    zmq_msg_init_size(&e->msg, bytes);
    if (bytes > 0) std::memcpy(zmq_msg_data(&e->msg), data, bytes);
    auto it = m.posted.find({peer, tag});
    if (it != m.posted.end()) {
      OpPtr r = std::move(it->second.front());
      it->second.pop_front();
      if (it->second.empty()) m.posted.erase(it);
      Impl::deliver(*r, e->data(), bytes, 0);
      m.cv.notify_all();
    } else {
      m.early[{peer, tag}].push_back(std::move(e));
    }
    op->done = true;
    return op;
  }
  FrameHeader h;
  h.tag = tag;
  h.length = bytes;
  {
    std::lock_guard lock(m.mutex);
    if (m.failed || m.closed) {
      op->done = true;
      op->error.clear();
      return op;  // the wait reports the failure
    }
    if (m.shaper) {
      const auto e = m.shaper->egress(peer, bytes, clock().now());
      h.egress_start = e.start;
      op->not_before = e.done;
    }
  }
  void* d = m.dealers[static_cast<std::size_t>(peer)];
  GRADEX_ENFORCE(d != nullptr, "send before connect()");
  const auto raw = h.encode();
  zmq_msg_t header;
  zmq_msg_init_size(&header, raw.size());
  std::memcpy(zmq_msg_data(&header), raw.data(), raw.size());
  zmq_msg_t payload;
  if (bytes > 0) {
    // Zero-copy: libzmq calls back when it no longer needs the buffer,
    // which is when the send is complete.
    auto* hint = new SendHint{&m, op};
    zmq_msg_init_data(&payload, const_cast<void*>(data), bytes,
                      [](void*, void* h) {
                        auto* s = static_cast<SendHint*>(h);
                        s->impl->complete(*s->op);
                        delete s;
                      },
                      hint);
  } else {
    zmq_msg_init(&payload);
    op->done = true;
  }
  if (zmq_msg_send(&header, d, ZMQ_SNDMORE) < 0 || zmq_msg_send(&payload, d, 0) < 0) {
    const std::string why = zmq_error("send");
    zmq_msg_close(&header);
    zmq_msg_close(&payload);
    m.fail(m.rank, detail::concat("rank ", m.rank, ": cannot send to rank ", peer, ": ", why));
  }
  return op;
}

namespace {
void post_recv(ZmqEndpoint::Impl& m, const OpPtr& op) {
  std::lock_guard lock(m.mutex);
  auto it = m.early.find({op->peer, op->tag});
  if (it != m.early.end()) {
    EarlyPtr e = std::move(it->second.front());
    it->second.pop_front();
    if (it->second.empty()) m.early.erase(it);
    ZmqEndpoint::Impl::deliver(*op, e->data(), e->bytes(), e->arrival);
    return;
  }
  m.posted[{op->peer, op->tag}].push_back(op);
}
}  // namespace

std::shared_ptr<RequestState> ZmqEndpoint::start_recv(int peer, void* data, std::size_t bytes,
                                                      Tag tag) {
  auto op = std::make_shared<Op>();
  op->kind = OpKind::recv;
  op->peer = peer;
  op->tag = tag;
  op->dst = data;
  op->bytes = bytes;
  post_recv(*impl_, op);
  return op;
}

std::shared_ptr<RequestState> ZmqEndpoint::start_recv_reduce(int peer, Tensor dst, ReduceOp rop,
                                                             Tag tag) {
  auto op = std::make_shared<Op>();
  op->kind = OpKind::recv_reduce;
  op->peer = peer;
  op->tag = tag;
  op->reduce_dst = dst;
  op->bytes = dst.bytes();
  op->rop = rop;
  post_recv(*impl_, op);
  return op;
}

void ZmqEndpoint::wait_state(RequestState& state) {
  Impl& m = *impl_;
  auto& op = static_cast<Op&>(state);
  const double started = wall_clock().now();
  const auto deadline = std::chrono::steady_clock::now() + m.options.timeout;
  std::unique_lock lock(m.mutex);
  m.cv.wait_until(lock, deadline, [&] { return op.done || m.failed; });
  if (m.failed) {
    const int who = m.failed_peer;
    const std::string why = m.failure;
    lock.unlock();
    abort(who, why);
    throw PeerLostError(who, why);
  }
  if (op.done) {
    lock.unlock();
    if (!op.error.empty()) throw InvariantError(detail::concat("rank ", m.rank, ": ", op.error));
    // Shaped: the message is not through the modelled NIC yet; this wait
    // is part of the receive's and ends by the same deadline.
    const double timeout_s = std::chrono::duration<double>(m.options.timeout).count();
    if (op.not_before <= 0 || sleep_until_by(op.not_before, started + timeout_s)) return;
    lock.lock();
  }
  const std::string what = detail::concat(
      "rank ", m.rank, ": timed out after ", m.options.timeout.count(), " ms waiting to ",
      op.kind == OpKind::send ? "send to" : "receive from", " rank ", op.peer, " (tag ", op.tag,
      ", ", op.bytes, " bytes)", op.done ? shaped_delay_note(op.not_before, started) : "");
  lock.unlock();
  abort(m.rank, what);
  throw TimeoutError(what);
}

}  // namespace gradex

// libzmq is not built with ThreadSanitizer: it hands messages between its
// threads through lock-free queues whose ordering TSan cannot see, so race
// reports inside it are false positives. TSan reads this hook at start-up;
// other builds never call it.
extern "C" const char* __tsan_default_suppressions() { return "race:libzmq.so\n"; }
