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
#include "transport/wire/auth.h"
#include "transport/wire/frame.h"
#include "transport/tcp/mesh.h"

namespace gradex {

namespace asio = boost::asio;
using ip_tcp = asio::ip::tcp;
using transport::Early;
using transport::EarlyPtr;
using transport::OpPtr;
using transport::Outgoing;
using transport::OutgoingPtr;
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

// Where the bytes of the frame being read from a connection go.
enum class Inbound {
  header,      // the next frame's header
  into_op,     // a posted receive's buffer (no copy)
  reduce,      // chunks combined into a posted receive-reduce's destination
  early,       // a buffer of its own, until the receive is posted
  discard,     // a payload nobody can take (its receive had the wrong size)
  reason,      // an abort frame's text
};

// The connection to one peer.
struct Link {
  int fd = -1;
  std::deque<OutgoingPtr> sends;  // the front one is being written
  std::size_t written = 0;  // bytes of the front frame (header + payload) on the wire
  Inbound in = Inbound::header;
  FrameHeader::Bytes in_header{};
  FrameHeader frame;          // the header of the frame being read
  std::size_t read = 0;       // bytes of the current header or payload read
  OpPtr op;                   // into_op, reduce
  EarlyPtr early;             // early
  std::vector<std::byte> scratch;
  std::size_t scratch_fill = 0;
  std::string reason;
  std::vector<std::byte> stage;  // bytes received ahead of where they go
  std::size_t stage_begin = 0, stage_end = 0;
  bool eof = false;  // the peer closed after its goodbye
};

}  // namespace

// All state belongs to the one thread that uses the endpoint (Comm's
// contract).
struct TcpEndpoint::Impl {
  TcpEndpoint& self;
  int rank;
  int size;

  // Connection setup only (mesh.h); destroyed once the group is connected.
  std::unique_ptr<asio::io_context> setup_io = std::make_unique<asio::io_context>();
  std::unique_ptr<ip_tcp::acceptor> acceptor;
  std::string advertised;
  std::vector<Link> links;

  Impl(TcpEndpoint& s, int r, int n) : self(s), rank(r), size(n) {}

  Link& link(int p) { return links[static_cast<std::size_t>(p)]; }

  void lost(int p, const std::string& what) {
    link(p).eof = true;
    self.lost(p, what);
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
    if (auto bad = FrameHeader::decode(l.in_header, self.options().max_message_bytes, h)) {
      return self.fail(p, detail::concat("rank ", rank, ": bad frame from rank ", p, ": ", *bad));
    }
    switch (h.kind) {
      case FrameKind::bye:
        self.on_bye(p);
        l.in = Inbound::header;
        return;
      case FrameKind::abort:
        l.reason.assign(h.length, '\0');
        l.in = Inbound::reason;
        if (h.length == 0) on_payload_done(p);
        return;
      case FrameKind::data: break;
    }
    auto landing = self.land(p, h);
    if (landing.receive) {
      l.op = std::move(landing.receive);
      l.in = l.op->kind == transport::OpKind::recv_reduce ? Inbound::reduce : Inbound::into_op;
    } else if (landing.discard) {
      l.in = Inbound::discard;
    } else {
      // The length was checked against max_message_bytes before this.
      // Not zeroed: every byte is read into it before anyone looks.
      auto bytes = std::make_shared_for_overwrite<std::byte[]>(h.length);
      l.early = std::make_shared<Early>();
      l.early->data = bytes.get();
      l.early->storage = std::move(bytes);
      l.early->bytes = h.length;
      l.early->arrival = landing.arrival;
      self.keep_early(p, h.tag, l.early);
      l.in = Inbound::early;
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
        l.op->finish();
        l.op = nullptr;
        break;
      case Inbound::early:
        self.early_complete(*l.early);
        l.early = nullptr;
        break;
      case Inbound::reason:
        self.on_abort_notice(p, static_cast<int>(l.frame.tag), l.reason);
        break;
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
    while (!stop && !self.failed() && !l.eof) {
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
        case Inbound::early:
          n = take(p, l.early->data + l.read, want, budget, settled, stop);
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
    while (!l.sends.empty() && !self.failed()) {
      Outgoing& f = *l.sends.front();
      const std::size_t h = f.header.size();
      iovec iov[2];
      int parts = 0;
      if (l.written < h) {
        iov[parts++] = {f.header.data() + l.written, h - l.written};
        if (f.bytes > 0) iov[parts++] = {const_cast<void*>(f.payload), f.bytes};
      } else {
        iov[parts++] = {static_cast<std::byte*>(const_cast<void*>(f.payload)) + (l.written - h),
                        f.bytes - (l.written - h)};
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
      if (l.written < h + f.bytes) continue;
      l.written = 0;
      if (f.op) f.op->finish();
      l.sends.pop_front();
    }
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
    for (std::size_t i = 0; i < fds.size() && !self.failed(); ++i) {
      if (fds[i].revents == 0) continue;
      const int p = peers[i];
      if (fds[i].revents & POLLOUT) write_some(p);
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) read_some(p);
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

TcpEndpoint::TcpEndpoint(int rank, int size, TransportOptions options)
    : ProcessEndpoint(rank, size, std::move(options)),
      impl_(std::make_unique<Impl>(*this, rank, size)) {
  Impl& m = *impl_;
  const TransportOptions& o = this->options();
  wire::require_token_beyond_loopback(o.bind_host, o.token);
  boost::system::error_code ec;
  const auto host = asio::ip::make_address(o.bind_host, ec);
  if (ec) throw ConfigError("bind address", "'" + o.bind_host + "' is not an IP address");
  m.acceptor = std::make_unique<ip_tcp::acceptor>(*m.setup_io);
  const ip_tcp::endpoint where(host, o.port);
  m.acceptor->open(where.protocol(), ec);
  if (!ec) m.acceptor->set_option(ip_tcp::acceptor::reuse_address(true), ec);
  if (!ec) m.acceptor->bind(where, ec);
  if (!ec) m.acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    throw ConfigError("bind address", detail::concat("rank ", rank, ": cannot listen on ",
                                                     o.bind_host, ":", o.port, ": ", ec.message()));
  }
  const std::string shown = o.advertise_host.empty() ? o.bind_host : o.advertise_host;
  m.advertised = detail::concat(shown, ":", m.acceptor->local_endpoint().port());
  m.links.resize(static_cast<std::size_t>(size));
}

TcpEndpoint::~TcpEndpoint() {
  // A rank that unwinds without close() failed: tell the peers so they stop
  // waiting for it now rather than at their timeouts.
  abort(rank(), detail::concat("rank ", rank(), " left without closing its endpoint"));
}

std::string TcpEndpoint::address() const { return impl_->advertised; }

void TcpEndpoint::connect(const std::vector<std::string>& addresses) {
  Impl& m = *impl_;
  GRADEX_ENFORCE(m.acceptor != nullptr, "connect() called twice");
  tcp::MeshRequest req;
  req.rank = m.rank;
  req.size = m.size;
  req.addresses = addresses;
  req.token = options().token;
  req.deadline = std::chrono::steady_clock::now() + options().timeout;
  req.timeout = options().timeout;
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
  mark_connected();
}

void TcpEndpoint::write(const OutgoingPtr& frame) {
  Link& l = impl_->link(frame->peer);
  if (l.fd < 0 || l.eof) return;
  l.sends.push_back(frame);
  // An idle connection takes the frame now, from the posting thread.
  if (l.sends.size() == 1) impl_->write_some(frame->peer);
}

void TcpEndpoint::progress(double until) { impl_->progress(until); }

bool TcpEndpoint::flushed() const {
  for (const Link& l : impl_->links) {
    if (l.fd >= 0 && !l.eof && !l.sends.empty()) return false;
  }
  return true;
}

// Best effort: only on a link whose stream is at a frame boundary.
void TcpEndpoint::notify(int peer, const Outgoing& frame) noexcept {
  Link& l = impl_->link(peer);
  if (l.fd < 0 || l.written > 0) return;
  iovec iov[2] = {{const_cast<std::byte*>(frame.header.data()), frame.header.size()},
                  {const_cast<void*>(frame.payload), frame.bytes}};
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = 2;
  (void)::sendmsg(l.fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
}

void TcpEndpoint::disconnect(bool /*orderly*/) noexcept { impl_->close_sockets(); }

// "; to rank 3: 2 frames queued, 1024 of 4194340 bytes of the first
// written; from rank 3: 512 of 4194304 payload bytes read, ..." for every
// connection with something in hand.
std::string TcpEndpoint::describe_connections() const {
  std::string out;
  for (int p = 0; p < impl_->size; ++p) {
    const Link& l = impl_->links[static_cast<std::size_t>(p)];
    if (!l.sends.empty()) {
      const Outgoing& f = *l.sends.front();
      out += detail::concat("; to rank ", p, ": ", l.sends.size(), " frame(s) queued, ", l.written,
                            " of ", f.header.size() + f.bytes, " bytes of the first written");
    }
    if (l.in != Inbound::header || l.read > 0 || l.stage_end > l.stage_begin) {
      out += detail::concat("; from rank ", p, ": ", l.read, " of ",
                            l.in == Inbound::header ? l.in_header.size() : l.frame.length,
                            l.in == Inbound::header ? " header" : " payload", " bytes read, ",
                            l.stage_end - l.stage_begin, " staged");
    }
  }
  return out;
}

}  // namespace gradex
