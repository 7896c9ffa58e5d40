#include "common/tcp/endpoint.h"

// Boost 1.74's asio/awaitable.hpp uses std::exchange without including it.
#include <utility>

#include <boost/asio.hpp>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include <unistd.h>

#include "common/errors.h"
#include "common/port_shaper.h"
#include "common/tcp/frame.h"
#include "common/tcp/mesh.h"

namespace gradex {

namespace asio = boost::asio;
using ip_tcp = asio::ip::tcp;
using tcp::FrameHeader;
using tcp::FrameKind;

namespace {

// Chunk of a receive-reduce or of a discarded payload: big enough to keep
// the socket busy, small enough to stay in cache while it is combined.
constexpr std::size_t kChunkBytes = std::size_t{256} << 10;

enum class OpKind { send, recv, recv_reduce, bye };

struct Op final : RequestState {
  OpKind kind = OpKind::send;
  int peer = 0;
  Tag tag = 0;
  const void* src = nullptr;
  void* dst = nullptr;
  std::size_t bytes = 0;
  Tensor reduce_dst;
  ReduceOp rop = ReduceOp::sum;
  FrameHeader::Bytes header{};  // send: owned until written
  double not_before = 0;        // shaped completion time (clock seconds)
  // Guarded by Impl::mutex.
  bool done = false;
  std::string error;  // set with done when the match was invalid
};
using OpPtr = std::shared_ptr<Op>;

// A message that arrived before its receive was posted.
struct Unexpected {
  std::unique_ptr<std::byte[]> data;
  std::size_t bytes = 0;
  double arrival = 0;
  bool complete = false;  // all bytes read; guarded by Impl::mutex
  OpPtr waiting;          // a receive posted while the bytes were still coming
};
using UnexpectedPtr = std::shared_ptr<Unexpected>;

// Everything about the connection to one peer. Fields without a note are
// touched by the I/O thread only (or after it has been joined).
struct Link {
  std::unique_ptr<tcp::Socket> socket;
  std::deque<OpPtr> sends;
  bool writing = false;  // a frame is partly on the wire
  FrameHeader::Bytes in_header{};
  std::vector<std::byte> scratch;
  std::string reason;  // payload of an abort frame
  bool said_bye = false;  // guarded by Impl::mutex
};

}  // namespace

struct TcpEndpoint::Impl {
  int rank;
  int size;
  TcpOptions options;
  std::optional<PortShaper> shaper;

  asio::io_context io;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::thread io_thread;
  // Connection setup runs on its own io_context, destroyed afterwards
  // together with the handlers it leaves behind (mesh.h).
  std::unique_ptr<asio::io_context> setup_io = std::make_unique<asio::io_context>();
  std::unique_ptr<ip_tcp::acceptor> acceptor;
  std::string advertised;
  std::vector<Link> links;

  std::mutex mutex;
  std::condition_variable cv;
  using Key = std::pair<int, Tag>;
  std::map<Key, std::deque<OpPtr>> posted;
  std::map<Key, std::deque<UnexpectedPtr>> unexpected;
  bool failed = false;
  int failed_peer = -1;
  std::string failure;
  bool closed = false;  // close() or abort() ran its I/O part

  Impl(int r, int n, TcpOptions o) : rank(r), size(n), options(std::move(o)) {}

  Link& link(int p) { return links[static_cast<std::size_t>(p)]; }

  void complete(Op& op, std::string error = {}) {
    {
      std::lock_guard lock(mutex);
      op.error = std::move(error);
      op.done = true;
    }
    cv.notify_all();
  }

  // The first failure wins; later ones are consequences of it.
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

  // Copies (or combines) an early message into a receive; under `mutex`.
  static void deliver(Op& op, const Unexpected& u) {
    if (op.bytes != u.bytes) {
      op.error = detail::concat("message size mismatch: rank ", op.peer, " sent ", u.bytes,
                                " bytes, the receive expected ", op.bytes, " (tag ", op.tag, ")");
    } else if (op.kind == OpKind::recv_reduce) {
      reduce_into(op.reduce_dst.data, u.data.get(), op.reduce_dst.count, op.reduce_dst.dtype,
                  op.rop);
    } else if (u.bytes > 0) {
      std::memcpy(op.dst, u.data.get(), u.bytes);
    }
    op.not_before = std::max(op.not_before, u.arrival);
    op.done = true;
  }

  // ---- I/O thread: receiving ------------------------------------------------

  void read_header(int p) {
    Link& l = link(p);
    asio::async_read(*l.socket, asio::buffer(l.in_header),
                     [this, p](boost::system::error_code ec, std::size_t) { on_header(p, ec); });
  }

  void lost(int p, const boost::system::error_code& ec) {
    {
      std::lock_guard lock(mutex);
      if (link(p).said_bye || closed) return;  // an orderly close, or our own
    }
    fail(p, detail::concat("rank ", rank, ": connection to rank ", p, " lost (", ec.message(),
                           ")"));
  }

  void on_header(int p, const boost::system::error_code& ec) {
    if (ec) return lost(p, ec);
    FrameHeader h;
    if (auto bad = FrameHeader::decode(link(p).in_header, options.max_message_bytes, h)) {
      return fail(p, detail::concat("rank ", rank, ": bad frame from rank ", p, ": ", *bad));
    }
    switch (h.kind) {
      case FrameKind::bye: {
        {
          std::lock_guard lock(mutex);
          link(p).said_bye = true;
        }
        cv.notify_all();
        return read_header(p);  // until the peer's EOF
      }
      case FrameKind::abort: return read_abort(p, h);
      case FrameKind::data: return on_data(p, h);
    }
  }

  void read_abort(int p, const FrameHeader& h) {
    Link& l = link(p);
    l.reason.assign(h.length, '\0');
    asio::async_read(*l.socket, asio::buffer(l.reason),
                     [this, p, failed_rank = static_cast<int>(h.tag)](auto ec, std::size_t) {
                       const std::string why = ec ? "(reason lost)" : link(p).reason;
                       fail(failed_rank, detail::concat("rank ", rank, ": rank ", failed_rank,
                                                        " failed (reported by rank ", p,
                                                        "): ", why));
                     });
  }

  void on_data(int p, const FrameHeader& h) {
    OpPtr op;
    UnexpectedPtr early;
    double arrival = 0;
    {
      std::lock_guard lock(mutex);
      if (failed) return;  // stop reading: nobody will wait for it
      if (shaper) arrival = shaper->ingress(p, h.length, h.egress_start);
      auto it = posted.find({p, h.tag});
      if (it != posted.end()) {
        op = std::move(it->second.front());
        it->second.pop_front();
        if (it->second.empty()) posted.erase(it);
      } else {
        // The length was checked against max_message_bytes before this.
        early = std::make_shared<Unexpected>();
        early->data.reset(new std::byte[h.length]);
        early->bytes = h.length;
        early->arrival = arrival;
        unexpected[{p, h.tag}].push_back(early);
      }
    }
    if (early) {
      asio::async_read(*link(p).socket, asio::buffer(early->data.get(), early->bytes),
                       [this, p, early](auto ec, std::size_t) {
                         if (ec) return lost(p, ec);
                         OpPtr waiting;
                         {
                           std::lock_guard lock(mutex);
                           early->complete = true;
                           waiting = std::move(early->waiting);
                           if (waiting) deliver(*waiting, *early);
                         }
                         if (waiting) cv.notify_all();
                         read_header(p);
                       });
      return;
    }
    op->not_before = arrival;
    if (op->bytes != h.length) {
      complete(*op, detail::concat("message size mismatch: rank ", p, " sent ", h.length,
                                   " bytes, the receive expected ", op->bytes, " (tag ", h.tag,
                                   ")"));
      return read_chunks(p, nullptr, h.length, 0);
    }
    if (op->kind == OpKind::recv_reduce) return read_chunks(p, op, h.length, 0);
    asio::async_read(*link(p).socket, asio::buffer(op->dst, op->bytes),
                     [this, p, op](auto ec, std::size_t) {
                       if (ec) return lost(p, ec);
                       complete(*op);
                       read_header(p);
                     });
  }

  // Reads `total` bytes in chunks, combining each into op's destination
  // (or dropping it when op is null), then the next header.
  void read_chunks(int p, OpPtr op, std::size_t total, std::size_t done) {
    if (done == total) {
      if (op) complete(*op);
      return read_header(p);
    }
    Link& l = link(p);
    const std::size_t n = std::min(kChunkBytes, total - done);
    if (l.scratch.size() < n) l.scratch.resize(kChunkBytes);
    asio::async_read(*l.socket, asio::buffer(l.scratch.data(), n),
                     [this, p, op, total, done, n](auto ec, std::size_t) {
                       if (ec) return lost(p, ec);
                       if (op) {
                         const Tensor& d = op->reduce_dst;
                         const std::size_t elem = dtype_size(d.dtype);
                         reduce_into(static_cast<std::byte*>(d.data) + done,
                                     link(p).scratch.data(), n / elem, d.dtype, op->rop);
                       }
                       read_chunks(p, op, total, done + n);
                     });
  }

  // ---- I/O thread: sending --------------------------------------------------

  void queue_send(const OpPtr& op) {
    Link& l = link(op->peer);
    l.sends.push_back(op);
    if (!l.writing) write_next(op->peer);
  }

  void write_next(int p) {
    Link& l = link(p);
    if (l.sends.empty()) {
      l.writing = false;
      return;
    }
    l.writing = true;
    const OpPtr& op = l.sends.front();
    const std::array<asio::const_buffer, 2> frame{asio::buffer(op->header),
                                                  asio::buffer(op->src, op->bytes)};
    asio::async_write(*l.socket, frame, [this, p](auto ec, std::size_t) {
      if (ec) return lost(p, ec);  // `writing` stays set: the frame is torn
      Link& ln = link(p);
      OpPtr sent = std::move(ln.sends.front());
      ln.sends.pop_front();
      complete(*sent);
      write_next(p);
    });
  }

  // ---- any thread -----------------------------------------------------------

  void stop_io() {
    work.reset();
    io.stop();
    if (io_thread.joinable() && io_thread.get_id() != std::this_thread::get_id()) {
      io_thread.join();
    }
  }

  // Best effort, after the I/O thread stopped: a short abort frame on every
  // link whose stream is at a frame boundary. Never blocks.
  void notify_peers(int failed_rank, const std::string& why) {
    const std::string reason = why.substr(0, tcp::kMaxReasonBytes);
    FrameHeader h;
    h.kind = FrameKind::abort;
    h.tag = static_cast<std::uint64_t>(failed_rank);
    h.length = reason.size();
    const auto header = h.encode();
    for (int p = 0; p < size; ++p) {
      Link& l = link(p);
      if (!l.socket || l.writing || p == failed_rank) continue;
      boost::system::error_code ec;
      l.socket->non_blocking(true, ec);
      const std::array<asio::const_buffer, 2> frame{asio::buffer(header), asio::buffer(reason)};
      l.socket->send(frame, 0, ec);
    }
  }

  void close_sockets() {
    for (Link& l : links) {
      if (!l.socket) continue;
      boost::system::error_code ec;
      l.socket->shutdown(ip_tcp::socket::shutdown_both, ec);
      l.socket->close(ec);
    }
  }

  [[noreturn]] void throw_failed(const std::string& context) {
    int who;
    std::string why;
    {
      std::lock_guard lock(mutex);
      who = failed_peer;
      why = failure;
    }
    throw PeerLostError(who, why + context);
  }
};

TcpEndpoint::TcpEndpoint(int rank, int size, TcpOptions options)
    : impl_(std::make_unique<Impl>(rank, size, std::move(options))) {
  GRADEX_ENFORCE(size >= 1 && rank >= 0 && rank < size, "rank ", rank, " of ", size);
  Impl& m = *impl_;
  if (m.options.shaping) {
    GRADEX_ENFORCE_EQ(m.options.shaping->endpoints(), size, "shaping topology size");
    if (m.options.shaping->shaped()) m.shaper.emplace(*m.options.shaping, rank);
  }
  boost::system::error_code ec;
  const auto host = asio::ip::make_address(m.options.bind_host, ec);
  if (ec) {
    throw ConfigError("bind address", "'" + m.options.bind_host + "' is not an IP address");
  }
  m.acceptor = std::make_unique<ip_tcp::acceptor>(*m.setup_io);
  const ip_tcp::endpoint where(host, m.options.port);
  m.acceptor->open(where.protocol(), ec);
  if (!ec) m.acceptor->set_option(ip_tcp::acceptor::reuse_address(true), ec);
  if (!ec) m.acceptor->bind(where, ec);
  if (!ec) m.acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    throw ConfigError("bind address", detail::concat("rank ", rank, ": cannot listen on ",
                                                     m.options.bind_host, ":", m.options.port,
                                                     ": ", ec.message()));
  }
  const std::string shown =
      m.options.advertise_host.empty() ? m.options.bind_host : m.options.advertise_host;
  m.advertised = detail::concat(shown, ":", m.acceptor->local_endpoint().port());
  m.links.resize(static_cast<std::size_t>(size));
}

TcpEndpoint::~TcpEndpoint() {
  // A rank that unwinds without close() failed: tell the peers so they stop
  // waiting for it now rather than at their timeouts.
  abort(impl_->rank, detail::concat("rank ", impl_->rank, " left without closing its endpoint"));
}

void TcpEndpoint::set_shaping(const std::optional<Topology>& topology) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  m.shaper.reset();
  if (topology && topology->shaped()) {
    GRADEX_ENFORCE_EQ(topology->endpoints(), m.size, "shaping topology size");
    m.shaper.emplace(*topology, m.rank);
  }
}

std::string TcpEndpoint::address() const { return impl_->advertised; }
int TcpEndpoint::rank() const { return impl_->rank; }
int TcpEndpoint::size() const { return impl_->size; }
Clock& TcpEndpoint::clock() { return wall_clock(); }
std::chrono::milliseconds TcpEndpoint::timeout() const { return impl_->options.timeout; }

void TcpEndpoint::connect(const std::vector<std::string>& addresses) {
  Impl& m = *impl_;
  GRADEX_ENFORCE(m.acceptor != nullptr, "connect() called twice");
  tcp::MeshRequest req;
  req.rank = m.rank;
  req.size = m.size;
  req.addresses = addresses;
  req.token = m.options.token;
  req.deadline = std::chrono::steady_clock::now() + m.options.timeout;
  auto sockets = tcp::build_mesh(*m.setup_io, *m.acceptor, req);
  // Move every connection to the data io_context, then drop the setup one
  // with whatever handlers it still holds.
  for (int p = 0; p < m.size; ++p) {
    auto& s = sockets[static_cast<std::size_t>(p)];
    if (!s) continue;
    const int fd = ::dup(s->native_handle());
    GRADEX_ENFORCE(fd >= 0, "dup failed");
    auto moved = std::make_unique<tcp::Socket>(m.io);
    moved->assign(s->local_endpoint().protocol(), fd);
    m.link(p).socket = std::move(moved);
  }
  sockets.clear();
  m.acceptor.reset();
  m.setup_io.reset();
  for (int p = 0; p < m.size; ++p) {
    if (m.link(p).socket) m.read_header(p);
  }
  m.work.emplace(m.io.get_executor());
  m.io_thread = std::thread([&m] {
    // Handlers do not throw (errors become failures), but a bad_alloc for
    // an early message might: end the endpoint instead of the process.
    try {
      m.io.run();
    } catch (const std::exception& e) {
      m.fail(m.rank, detail::concat("rank ", m.rank, ": I/O thread failed: ", e.what()));
    }
  });
}

void TcpEndpoint::close() {
  Impl& m = *impl_;
  int failed_rank = -1;
  std::string failure;
  {
    std::lock_guard lock(m.mutex);
    if (m.closed) return;
    if (!m.io_thread.joinable()) {  // never connected: nothing to say
      m.closed = true;
      return;
    }
    if (m.failed) {
      failed_rank = m.failed_peer;
      failure = m.failure;
    }
  }
  if (failed_rank >= 0) return abort(failed_rank, failure);
  for (int p = 0; p < m.size; ++p) {
    if (!m.link(p).socket) continue;
    auto bye = std::make_shared<Op>();
    bye->kind = OpKind::bye;
    bye->peer = p;
    FrameHeader h;
    h.kind = FrameKind::bye;
    bye->header = h.encode();
    asio::post(m.io, [&m, bye] { m.queue_send(bye); });
  }
  {
    std::unique_lock lock(m.mutex);
    m.cv.wait_until(lock, std::chrono::steady_clock::now() + m.options.timeout, [&] {
      if (m.failed) return true;
      for (int p = 0; p < m.size; ++p) {
        if (m.link(p).socket && !m.link(p).said_bye) return false;
      }
      return true;
    });
    m.closed = true;
  }
  m.stop_io();
  m.close_sockets();
}

void TcpEndpoint::abort(int failed_rank, const std::string& why) noexcept {
  Impl& m = *impl_;
  try {
    m.fail(failed_rank, why);
    {
      std::lock_guard lock(m.mutex);
      if (m.closed) return;
      m.closed = true;
    }
    m.stop_io();
    m.notify_peers(failed_rank, why);
    m.close_sockets();
  } catch (...) {
    // Nothing more can be done for the peers; their timeouts will fire.
  }
}

std::shared_ptr<RequestState> TcpEndpoint::start_send(int peer, const void* data,
                                                      std::size_t bytes, Tag tag) {
  Impl& m = *impl_;
  auto op = std::make_shared<Op>();
  op->kind = OpKind::send;
  op->peer = peer;
  op->tag = tag;
  op->src = data;
  op->bytes = bytes;
  if (peer == m.rank) {
    // A message to oneself is a local copy: match it here.
    std::lock_guard lock(m.mutex);
    auto u = std::make_shared<Unexpected>();
    u->data.reset(new std::byte[bytes]);
    if (bytes > 0) std::memcpy(u->data.get(), data, bytes);
    u->bytes = bytes;
    u->complete = true;
    auto it = m.posted.find({peer, tag});
    if (it != m.posted.end()) {
      OpPtr r = std::move(it->second.front());
      it->second.pop_front();
      if (it->second.empty()) m.posted.erase(it);
      Impl::deliver(*r, *u);
      m.cv.notify_all();
    } else {
      m.unexpected[{peer, tag}].push_back(std::move(u));
    }
    op->done = true;
    return op;
  }
  FrameHeader h;
  h.tag = tag;
  h.length = bytes;
  {
    std::lock_guard lock(m.mutex);
    if (m.shaper) {
      const auto e = m.shaper->egress(peer, bytes, clock().now());
      h.egress_start = e.start;
      op->not_before = e.done;
    }
  }
  op->header = h.encode();
  GRADEX_ENFORCE(m.io_thread.joinable(), "send before connect()");
  asio::post(m.io, [&m, op] { m.queue_send(op); });
  return op;
}

namespace {
void post_recv(TcpEndpoint::Impl& m, const OpPtr& op) {
  std::lock_guard lock(m.mutex);
  auto it = m.unexpected.find({op->peer, op->tag});
  if (it != m.unexpected.end()) {
    UnexpectedPtr u = std::move(it->second.front());
    it->second.pop_front();
    if (it->second.empty()) m.unexpected.erase(it);
    if (u->complete) {
      TcpEndpoint::Impl::deliver(*op, *u);
    } else {
      u->waiting = op;
    }
    return;
  }
  m.posted[{op->peer, op->tag}].push_back(op);
}
}  // namespace

std::shared_ptr<RequestState> TcpEndpoint::start_recv(int peer, void* data, std::size_t bytes,
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

std::shared_ptr<RequestState> TcpEndpoint::start_recv_reduce(int peer, Tensor dst, ReduceOp rop,
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

void TcpEndpoint::wait_state(RequestState& state) {
  Impl& m = *impl_;
  auto& op = static_cast<Op&>(state);
  const auto deadline = std::chrono::steady_clock::now() + m.options.timeout;
  std::unique_lock lock(m.mutex);
  m.cv.wait_until(lock, deadline, [&] { return op.done || m.failed; });
  if (op.done) {
    lock.unlock();
    if (!op.error.empty()) throw InvariantError(detail::concat("rank ", m.rank, ": ", op.error));
    if (op.not_before > 0) clock().sleep_until(op.not_before);
    return;
  }
  if (m.failed) {
    const int who = m.failed_peer;
    const std::string why = m.failure;
    lock.unlock();
    // Pass the news on: a peer blocked on this rank learns the root cause
    // now instead of seeing this rank vanish.
    abort(who, why);
    throw PeerLostError(who, why);
  }
  const std::string what = detail::concat(
      "rank ", m.rank, ": timed out after ", m.options.timeout.count(), " ms waiting to ",
      op.kind == OpKind::send ? "send to" : "receive from", " rank ", op.peer, " (tag ", op.tag,
      ", ", op.bytes, " bytes)");
  lock.unlock();
  abort(m.rank, what);
  throw TimeoutError(what);
}

}  // namespace gradex
