#include "transport/tcp/endpoint.h"

// Boost 1.74's asio/awaitable.hpp uses std::exchange without including it.
#include <utility>

#include <boost/asio.hpp>

#include <cerrno>
#include <cstring>
#include <deque>
#include <map>

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/errors.h"
#include "transport/port_shaper.h"
#include "transport/wire/auth.h"
#include "transport/wire/frame.h"
#include "transport/tcp/mesh.h"

namespace gradex {

namespace asio = boost::asio;
using ip_tcp = asio::ip::tcp;
using wire::FrameHeader;
using wire::FrameKind;

namespace {

// Chunk of a receive-reduce or of a discarded payload: big enough to keep
// the socket busy, small enough to stay in cache while it is combined.
constexpr std::size_t kChunkBytes = std::size_t{256} << 10;
// Bytes read from one connection before the others get their turn.
constexpr std::size_t kReadBudget = std::size_t{4} << 20;
// Small frames are read whole into a staging buffer, header and payload in
// one recv() (several frames when they are queued); payloads longer than
// this are read straight into their destination.
constexpr std::size_t kStageBytes = std::size_t{8} << 10;

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
  bool done = false;
  std::string error;  // set with done when the match was invalid
};
using OpPtr = std::shared_ptr<Op>;

// A message that arrived before its receive was posted.
struct Unexpected {
  std::unique_ptr<std::byte[]> data;
  std::size_t bytes = 0;
  double arrival = 0;
  bool complete = false;  // all bytes read
  OpPtr waiting;          // a receive posted while the bytes were still coming
};
using UnexpectedPtr = std::shared_ptr<Unexpected>;

// Where the bytes of the frame being read from a connection go.
enum class Inbound {
  header,      // the next frame's header
  into_op,     // a posted receive's buffer (no copy)
  reduce,      // chunks combined into a posted receive-reduce's destination
  unexpected,  // a buffer of its own, until the receive is posted
  discard,     // a payload nobody can take (its receive had the wrong size)
  reason,      // an abort frame's text
};

// The connection to one peer.
struct Link {
  int fd = -1;
  std::deque<OpPtr> sends;  // the front one is being written
  std::size_t written = 0;  // bytes of the front frame (header + payload) on the wire
  Inbound in = Inbound::header;
  FrameHeader::Bytes in_header{};
  FrameHeader frame;          // the header of the frame being read
  std::size_t read = 0;       // bytes of the current header or payload read
  OpPtr op;                   // into_op, reduce
  UnexpectedPtr early;        // unexpected
  std::vector<std::byte> scratch;
  std::size_t scratch_fill = 0;
  std::string reason;
  std::vector<std::byte> stage;  // bytes received ahead of where they go
  std::size_t stage_begin = 0, stage_end = 0;
  bool said_bye = false;
  bool eof = false;  // the peer closed after its goodbye
};

}  // namespace

// All state belongs to the one thread that uses the endpoint (Comm's
// contract): there is no I/O thread. Every wait drives every connection
// (writes what is queued, reads what has arrived) until its operation is
// done, as MPI's progress engine does; a send is written straight from the
// posting call when its connection is idle. A message then costs one
// wake-up of the receiving process, not three thread hand-offs, which is
// what small messages (latency) are made of.
struct TcpEndpoint::Impl {
  int rank;
  int size;
  TcpOptions options;
  std::optional<PortShaper> shaper;

  // Connection setup only (mesh.h); destroyed once the group is connected.
  std::unique_ptr<asio::io_context> setup_io = std::make_unique<asio::io_context>();
  std::unique_ptr<ip_tcp::acceptor> acceptor;
  std::string advertised;
  std::vector<Link> links;
  bool connected = false;

  using Key = std::pair<int, Tag>;
  std::map<Key, std::deque<OpPtr>> posted;
  std::map<Key, std::deque<UnexpectedPtr>> unexpected;
  bool failed = false;
  int failed_peer = -1;
  std::string failure;
  bool closed = false;  // close() or abort() closed the connections

  Impl(int r, int n, TcpOptions o) : rank(r), size(n), options(std::move(o)) {}

  Link& link(int p) { return links[static_cast<std::size_t>(p)]; }

  static void finish(Op& op, std::string error = {}) {
    op.error = std::move(error);
    op.done = true;
  }

  // The first failure wins; later ones are consequences of it.
  void fail(int peer, const std::string& why) {
    if (failed) return;
    failed = true;
    failed_peer = peer;
    failure = why;
  }

  void lost(int p, const std::string& what) {
    Link& l = link(p);
    if (l.said_bye || closed) {  // an orderly close, or our own
      l.eof = true;
      return;
    }
    fail(p, detail::concat("rank ", rank, ": connection to rank ", p, " lost (", what, ")"));
  }

  // Copies (or combines) an early message into a receive.
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

  // ---- receiving ------------------------------------------------------------

  // One recv() into [data, data + want); returns the bytes read, 0 when the
  // socket has nothing now, and marks the link lost on EOF or error.
  std::size_t receive(int p, void* data, std::size_t want, bool& stop) {
    Link& l = link(p);
    const ssize_t got = ::recv(l.fd, data, want, MSG_DONTWAIT);
    if (got > 0) return static_cast<std::size_t>(got);
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      stop = true;
      return 0;
    }
    lost(p, got == 0 ? "end of stream" : std::strerror(errno));
    stop = true;
    return 0;
  }

  // Up to `want` bytes for [data, data + want): first from the staging
  // buffer, then, while `budget` lasts, from the socket (straight into
  // `data` when the rest is long, else through the staging buffer). Bytes
  // already staged are always handed out: ppoll cannot see them, so none
  // may be left behind when a round of reading ends. `settled`: a receive
  // completed in this round, so an empty staging buffer ends it instead of
  // a recv() that would most likely find nothing (ppoll tells when more
  // arrives).
  std::size_t take(int p, void* data, std::size_t want, std::size_t& budget, bool settled,
                   bool& stop) {
    Link& l = link(p);
    if (l.stage_begin == l.stage_end) {
      if (settled || budget == 0) {
        stop = true;
        return 0;
      }
      want = std::min(want, budget);
      std::size_t got;
      if (want >= kStageBytes) {
        got = receive(p, data, want, stop);
        budget -= got;
        return got;
      }
      l.stage.resize(kStageBytes);
      l.stage_begin = 0;
      l.stage_end = receive(p, l.stage.data(), l.stage.size(), stop);
      budget -= std::min(budget, l.stage_end);
    }
    const std::size_t n = std::min(want, l.stage_end - l.stage_begin);
    if (n > 0) std::memcpy(data, l.stage.data() + l.stage_begin, n);
    l.stage_begin += n;
    return n;
  }

  // The header is complete: decide where the payload goes.
  void on_header(int p) {
    Link& l = link(p);
    l.read = 0;
    FrameHeader& h = l.frame;
    if (auto bad = FrameHeader::decode(l.in_header, options.max_message_bytes, h)) {
      return fail(p, detail::concat("rank ", rank, ": bad frame from rank ", p, ": ", *bad));
    }
    switch (h.kind) {
      case FrameKind::bye:
        l.said_bye = true;
        l.in = Inbound::header;
        return;
      case FrameKind::abort:
        l.reason.assign(h.length, '\0');
        l.in = Inbound::reason;
        if (h.length == 0) on_payload_done(p);
        return;
      case FrameKind::data: break;
    }
    const double arrival = shaper ? shaper->ingress(p, h.length, h.egress_start) : 0;
    auto it = posted.find({p, h.tag});
    if (it == posted.end()) {
      // The length was checked against max_message_bytes before this.
      l.early = std::make_shared<Unexpected>();
      l.early->data.reset(new std::byte[h.length]);
      l.early->bytes = h.length;
      l.early->arrival = arrival;
      unexpected[{p, h.tag}].push_back(l.early);
      l.in = Inbound::unexpected;
    } else {
      l.op = std::move(it->second.front());
      it->second.pop_front();
      if (it->second.empty()) posted.erase(it);
      l.op->not_before = arrival;
      if (l.op->bytes != h.length) {
        finish(*l.op, detail::concat("message size mismatch: rank ", p, " sent ", h.length,
                                     " bytes, the receive expected ", l.op->bytes, " (tag ",
                                     h.tag, ")"));
        l.op = nullptr;
        l.in = Inbound::discard;
      } else {
        l.in = l.op->kind == OpKind::recv_reduce ? Inbound::reduce : Inbound::into_op;
      }
    }
    l.scratch_fill = 0;
    if (h.length == 0) on_payload_done(p);
  }

  // Returns true when a posted receive completed.
  bool on_payload_done(int p) {
    Link& l = link(p);
    const bool posted_done = l.in == Inbound::into_op || l.in == Inbound::reduce;
    switch (l.in) {
      case Inbound::into_op:
      case Inbound::reduce:
        finish(*l.op);
        l.op = nullptr;
        break;
      case Inbound::unexpected:
        l.early->complete = true;
        if (l.early->waiting) deliver(*l.early->waiting, *l.early);
        l.early->waiting = nullptr;
        l.early = nullptr;
        break;
      case Inbound::reason: {
        const int failed_rank = static_cast<int>(l.frame.tag);
        fail(failed_rank, detail::concat("rank ", rank, ": rank ", failed_rank,
                                         " failed (reported by rank ", p, "): ", l.reason));
        break;
      }
      case Inbound::discard:
      case Inbound::header: break;
    }
    l.in = Inbound::header;
    l.read = 0;
    return posted_done;
  }

  // Reads what connection p has for us now: everything staged, and from
  // the socket up to the read budget.
  void read_some(int p) {
    Link& l = link(p);
    bool stop = false;
    bool settled = false;
    std::size_t budget = kReadBudget;
    while (!stop && !failed && !l.eof) {
      if (l.in == Inbound::header) {
        const std::size_t n = take(p, l.in_header.data() + l.read, l.in_header.size() - l.read,
                                   budget, settled, stop);
        l.read += n;
        if (l.read == l.in_header.size()) {
          on_header(p);
          // A zero-length payload completes with its header.
          if (l.frame.kind == FrameKind::data && l.frame.length == 0) settled = true;
        }
        continue;
      }
      const std::size_t length = l.frame.length;
      const std::size_t want = length - l.read;
      std::size_t n = 0;
      switch (l.in) {
        case Inbound::into_op:
          n = take(p, static_cast<std::byte*>(l.op->dst) + l.read, want, budget, settled, stop);
          break;
        case Inbound::unexpected:
          n = take(p, l.early->data.get() + l.read, want, budget, settled, stop);
          break;
        case Inbound::reason:
          n = take(p, l.reason.data() + l.read, want, budget, settled, stop);
          break;
        case Inbound::reduce:
        case Inbound::discard: {
          // A chunk ends at a multiple of the element size (the frame's
          // length is one), so every chunk combines whole elements.
          const std::size_t chunk = std::min(kChunkBytes, length - (l.read - l.scratch_fill));
          if (l.scratch.size() < kChunkBytes) l.scratch.resize(kChunkBytes);
          n = take(p, l.scratch.data() + l.scratch_fill, chunk - l.scratch_fill, budget, settled,
                   stop);
          l.scratch_fill += n;
          if (l.scratch_fill == chunk) {
            if (l.in == Inbound::reduce) {
              const Tensor& d = l.op->reduce_dst;
              const std::size_t offset = l.read + n - chunk;
              reduce_into(static_cast<std::byte*>(d.data) + offset, l.scratch.data(),
                          chunk / dtype_size(d.dtype), d.dtype, l.op->rop);
            }
            l.scratch_fill = 0;
          }
          break;
        }
        case Inbound::header: break;
      }
      l.read += n;
      if (l.read == length && on_payload_done(p)) settled = true;
    }
  }

  // ---- sending --------------------------------------------------------------

  // Writes queued frames to p until the socket is full or the queue empty.
  void write_some(int p) {
    Link& l = link(p);
    while (!l.sends.empty() && !failed) {
      Op& op = *l.sends.front();
      const std::size_t h = op.header.size();
      iovec iov[2];
      int parts = 0;
      if (l.written < h) {
        iov[parts++] = {op.header.data() + l.written, h - l.written};
        if (op.bytes > 0) iov[parts++] = {const_cast<void*>(op.src), op.bytes};
      } else {
        iov[parts++] = {static_cast<std::byte*>(const_cast<void*>(op.src)) + (l.written - h),
                        op.bytes - (l.written - h)};
      }
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = static_cast<decltype(msg.msg_iovlen)>(parts);
      const ssize_t n = ::sendmsg(l.fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
        return lost(p, std::strerror(errno));
      }
      l.written += static_cast<std::size_t>(n);
      if (l.written < h + op.bytes) continue;
      l.written = 0;
      finish(op);
      l.sends.pop_front();
    }
  }

  void queue_send(const OpPtr& op) {
    Link& l = link(op->peer);
    l.sends.push_back(op);
    // An idle connection takes the frame now, from the posting thread.
    if (l.sends.size() == 1) write_some(op->peer);
  }

  // ---- progress -------------------------------------------------------------

  // progress()'s ppoll set, kept to spare an allocation per poll.
  std::vector<pollfd> fds;
  std::vector<int> peers;

  // Waits (at most until `until`, in clock seconds) for any connection to be
  // readable, or writable where frames are queued, and serves them.
  void progress(double until) {
    fds.clear();
    peers.clear();
    for (int p = 0; p < size; ++p) {
      Link& l = link(p);
      if (l.fd < 0 || l.eof) continue;
      short events = POLLIN;
      if (!l.sends.empty()) events |= POLLOUT;
      fds.push_back({l.fd, events, 0});
      peers.push_back(p);
    }
    const double left = std::max(0.0, until - wall_clock().now());
    timespec ts{};
    ts.tv_sec = static_cast<time_t>(left);
    ts.tv_nsec = static_cast<long>((left - static_cast<double>(ts.tv_sec)) * 1e9);
    const int ready = ::ppoll(fds.data(), fds.size(), &ts, nullptr);
    if (ready <= 0) return;  // timed out, or a signal: the caller checks its deadline
    for (std::size_t i = 0; i < fds.size() && !failed; ++i) {
      if (fds[i].revents == 0) continue;
      const int p = peers[i];
      if (fds[i].revents & POLLOUT) write_some(p);
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) read_some(p);
    }
  }

  // "; to rank 3: 2 frames queued, 1024 of 4194340 bytes of the first
  // written; from rank 3: 512 of 4194304 payload bytes read, ..." for every
  // connection with something in hand, and the receives still posted.
  std::string describe_pending() const {
    std::string out;
    for (int p = 0; p < size; ++p) {
      const Link& l = links[static_cast<std::size_t>(p)];
      if (!l.sends.empty()) {
        out += detail::concat("; to rank ", p, ": ", l.sends.size(), " frame(s) queued, ",
                              l.written, " of ", l.sends.front()->header.size() + l.sends.front()->bytes,
                              " bytes of the first written");
      }
      if (l.in != Inbound::header || l.read > 0 || l.stage_end > l.stage_begin) {
        out += detail::concat("; from rank ", p, ": ", l.read, " of ",
                              l.in == Inbound::header ? l.in_header.size() : l.frame.length,
                              l.in == Inbound::header ? " header" : " payload",
                              " bytes read, ", l.stage_end - l.stage_begin, " staged");
      }
    }
    std::size_t posted_receives = 0;
    for (const auto& [key, ops] : posted) posted_receives += ops.size();
    std::size_t early = 0;
    for (const auto& [key, msgs] : unexpected) early += msgs.size();
    out += detail::concat("; ", posted_receives, " receive(s) posted, ", early,
                          " message(s) waiting for theirs");
    return out;
  }

  // ---- ending ---------------------------------------------------------------

  // Best effort: a short abort frame on every link whose stream is at a
  // frame boundary. Never blocks.
  void notify_peers(int failed_rank, const std::string& why) {
    const std::string reason = why.substr(0, wire::kMaxReasonBytes);
    FrameHeader h;
    h.kind = FrameKind::abort;
    h.tag = static_cast<std::uint64_t>(failed_rank);
    h.length = reason.size();
    const auto header = h.encode();
    for (int p = 0; p < size; ++p) {
      Link& l = link(p);
      if (l.fd < 0 || l.written > 0 || p == failed_rank) continue;
      iovec iov[2] = {{const_cast<std::byte*>(header.data()), header.size()},
                      {const_cast<char*>(reason.data()), reason.size()}};
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = 2;
      (void)::sendmsg(l.fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    }
  }

  void close_sockets() {
    for (Link& l : links) {
      if (l.fd < 0) continue;
      ::shutdown(l.fd, SHUT_RDWR);
      ::close(l.fd);
      l.fd = -1;
    }
  }
};

TcpEndpoint::TcpEndpoint(int rank, int size, TcpOptions options)
    : impl_(std::make_unique<Impl>(rank, size, std::move(options))) {
  GRADEX_ENFORCE(size >= 1 && rank >= 0 && rank < size, "rank ", rank, " of ", size);
  Impl& m = *impl_;
  wire::require_token_beyond_loopback(m.options.bind_host, m.options.token);
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
  req.timeout = m.options.timeout;
  auto sockets = tcp::build_mesh(*m.setup_io, *m.acceptor, req);
  // Keep each connection as a plain non-blocking descriptor, then drop the
  // setup io_context with whatever handlers it still holds.
  for (int p = 0; p < m.size; ++p) {
    auto& s = sockets[static_cast<std::size_t>(p)];
    if (!s) continue;
    const int fd = ::dup(s->native_handle());
    GRADEX_ENFORCE(fd >= 0, "dup failed: ", std::strerror(errno));
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    m.link(p).fd = fd;
  }
  sockets.clear();
  m.acceptor.reset();
  m.setup_io.reset();
  m.connected = true;
}

void TcpEndpoint::close() {
  Impl& m = *impl_;
  if (m.closed) return;
  if (!m.connected) {  // never connected: nothing to say
    m.closed = true;
    return;
  }
  if (m.failed) return abort(m.failed_peer, m.failure);
  for (int p = 0; p < m.size; ++p) {
    if (m.link(p).fd < 0) continue;
    auto bye = std::make_shared<Op>();
    bye->kind = OpKind::bye;
    bye->peer = p;
    FrameHeader h;
    h.kind = FrameKind::bye;
    bye->header = h.encode();
    m.queue_send(bye);
  }
  // Until every goodbye is written and every peer's has been read (or the
  // timeout): a peer still sending to us must not see us vanish.
  const double deadline = wall_clock().now() + std::chrono::duration<double>(m.options.timeout).count();
  auto finished = [&] {
    if (m.failed) return true;
    for (int p = 0; p < m.size; ++p) {
      const Link& l = m.link(p);
      // A peer that already closed its end reads nothing more from us.
      if (l.fd >= 0 && !l.eof && (!l.said_bye || !l.sends.empty())) return false;
    }
    return true;
  };
  while (!finished() && wall_clock().now() < deadline) m.progress(deadline);
  m.closed = true;
  m.close_sockets();
}

void TcpEndpoint::abort(int failed_rank, const std::string& why) noexcept {
  Impl& m = *impl_;
  try {
    m.fail(failed_rank, why);
    if (m.closed) return;
    m.closed = true;
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
    } else {
      m.unexpected[{peer, tag}].push_back(std::move(u));
    }
    op->done = true;
    return op;
  }
  GRADEX_ENFORCE(m.connected, "send before connect()");
  FrameHeader h;
  h.tag = tag;
  h.length = bytes;
  if (m.shaper) {
    const auto e = m.shaper->egress(peer, bytes, clock().now());
    h.egress_start = e.start;
    op->not_before = e.done;
  }
  op->header = h.encode();
  // After a failure nothing more goes out; the wait reports the failure.
  if (!m.failed && !m.closed) m.queue_send(op);
  return op;
}

namespace {
void post_recv(TcpEndpoint::Impl& m, const OpPtr& op) {
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
  const double started = wall_clock().now();
  const double deadline = started + std::chrono::duration<double>(m.options.timeout).count();
  // Poll without sleeping first, yielding the core between polls: a message
  // that arrives within `spin` is taken without putting this process to
  // sleep and waking it again, which costs tens of microseconds (more on a
  // virtual machine, whose idle vCPU halts). Yielding lets a process that
  // shares the core run meanwhile, so an oversubscribed machine loses little
  // to the polling; MPI's progress engine polls the same way.
  if (m.options.spin.count() > 0) {
    const double spin_until =
        std::min(deadline, wall_clock().now() + std::chrono::duration<double>(m.options.spin).count());
    while (!op.done && !m.failed && !m.closed && wall_clock().now() < spin_until) {
      m.progress(0);
      if (!op.done) sched_yield();
    }
  }
  while (!op.done && !m.failed && !m.closed && wall_clock().now() < deadline) {
    m.progress(deadline);
  }
  if (op.done) {
    if (!op.error.empty()) throw InvariantError(detail::concat("rank ", m.rank, ": ", op.error));
    // Shaped: the message is not through the modelled NIC yet. Keep the
    // connections moving meanwhile, so the peers' frames are not held up;
    // this wait is part of the receive's and ends by the same deadline.
    const double until = std::min(op.not_before, deadline);
    while (!m.failed && !m.closed && wall_clock().now() < until) m.progress(until);
    if (m.failed || m.closed || wall_clock().now() >= op.not_before) return;
  }
  const std::string waiting = detail::concat(
      "waiting to ", op.kind == OpKind::send ? "send to" : "receive from", " rank ", op.peer,
      " (tag ", op.tag, ", ", op.bytes, " bytes)",
      op.done ? shaped_delay_note(op.not_before, started) : "");
  if (m.failed || m.closed) {
    const int who = m.failed ? m.failed_peer : m.rank;
    const std::string why =
        m.failed ? m.failure : detail::concat("rank ", m.rank, ": endpoint already closed");
    // Pass the news on: a peer blocked on this rank learns the root cause
    // now instead of seeing this rank vanish.
    abort(who, why);
    throw PeerLostError(who, detail::concat(why, " (rank ", m.rank, " was ", waiting, ")"));
  }
  // What every connection still had in hand, to tell a lost message from a
  // slow peer.
  const std::string what = detail::concat("rank ", m.rank, ": timed out after ",
                                          m.options.timeout.count(), " ms ", waiting,
                                          m.describe_pending());
  abort(m.rank, what);
  throw TimeoutError(what);
}

}  // namespace gradex
