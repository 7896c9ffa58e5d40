#include "transport/process_endpoint.h"

#include <sched.h>

#include <algorithm>
#include <cstring>

#include "common/clock.h"
#include "common/debug_log.h"
#include "common/errors.h"

namespace gradex::transport {

using wire::FrameHeader;
using wire::FrameKind;

namespace {
double seconds(std::chrono::microseconds d) { return std::chrono::duration<double>(d).count(); }
double seconds(std::chrono::milliseconds d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

ProcessEndpoint::ProcessEndpoint(int rank, int size, TransportOptions options)
    : rank_(rank),
      size_(size),
      options_(std::move(options)),
      said_bye_(static_cast<std::size_t>(std::max(size, 0)), 0),
      gone_(said_bye_) {
  GRADEX_ENFORCE(size >= 1 && rank >= 0 && rank < size, "rank ", rank, " of ", size);
  set_shaping(options_.shaping);
}

Clock& ProcessEndpoint::clock() { return wall_clock(); }

void ProcessEndpoint::set_shaping(const std::optional<Topology>& topology) {
  shaper_.reset();
  if (topology) GRADEX_ENFORCE_EQ(topology->endpoints(), size_, "shaping topology size");
  if (topology && topology->shaped()) shaper_.emplace(*topology, rank_);
}

// ---- posting ----------------------------------------------------------------

std::shared_ptr<RequestState> ProcessEndpoint::start_send(int peer, const void* data,
                                                          std::size_t bytes, Tag tag) {
  auto op = make_send(rank_, peer, data, bytes, tag);
  if (peer == rank_) {
    // A message to oneself is a local copy, matched here.
    auto copy = std::make_shared_for_overwrite<std::byte[]>(bytes);  // overwritten next
    if (bytes > 0) std::memcpy(copy.get(), data, bytes);
    auto early = std::make_shared<Early>();
    early->data = copy.get();
    early->storage = std::move(copy);
    early->bytes = bytes;
    early->complete = true;
    if (auto r = matcher_.take_receive(peer, tag)) {
      take_early(**r, *early);
    } else {
      matcher_.add_arrival(peer, tag, std::move(early));
    }
    op->finish();
    return op;
  }
  GRADEX_ENFORCE(connected_, "send before connect()");
  FrameHeader h;
  h.tag = tag;
  h.length = bytes;
  if (shaper_) {
    const auto e = shaper_->egress(peer, bytes, clock().now(), collective_protocol());
    h.egress_start = e.start;
    op->not_before = e.done;
  }
  // After a failure nothing more goes out; the wait reports the failure.
  if (failed() || closed_) return op;
  auto frame = std::make_shared<Outgoing>();
  frame->peer = peer;
  frame->header = h.encode();
  frame->payload = data;
  frame->bytes = bytes;
  frame->op = op;
  write(frame);
  return op;
}

void ProcessEndpoint::take_early(Op& op, const Early& early) {
  op.not_before = std::max(op.not_before, early.arrival);
  op.finish(deliver(op, op.peer, early.data, early.bytes));
}

void ProcessEndpoint::post_receive(const OpPtr& op) {
  if (auto early = matcher_.take_arrival(op->peer, op->tag)) {
    if ((*early)->complete) {
      take_early(*op, **early);
    } else {
      (*early)->waiting = op;
    }
    return;
  }
  matcher_.add_receive(op->peer, op->tag, op);
}

std::shared_ptr<RequestState> ProcessEndpoint::start_recv(int peer, void* data, std::size_t bytes,
                                                          Tag tag) {
  auto op = make_recv(rank_, peer, data, bytes, tag);
  post_receive(op);
  return op;
}

std::shared_ptr<RequestState> ProcessEndpoint::start_recv_reduce(int peer, Tensor dst,
                                                                 ReduceOp rop, Tag tag) {
  auto op = make_recv_reduce(rank_, peer, dst, rop, tag);
  post_receive(op);
  return op;
}

// ---- arrivals ---------------------------------------------------------------

ProcessEndpoint::Landing ProcessEndpoint::land(int peer, const FrameHeader& h) {
  Landing l;
  l.arrival =
      shaper_ ? shaper_->ingress(peer, h.length, h.egress_start, collective_protocol()) : 0;
  auto r = matcher_.take_receive(peer, h.tag);
  if (!r) return l;
  Op& op = **r;
  op.not_before = l.arrival;
  if (op.bytes != h.length) {
    op.finish(size_mismatch(peer, h.length, op));
    l.discard = true;
    return l;
  }
  l.receive = std::move(*r);
  return l;
}

void ProcessEndpoint::keep_early(int peer, Tag tag, const EarlyPtr& early) {
  matcher_.add_arrival(peer, tag, early);
}

void ProcessEndpoint::early_complete(Early& early) {
  early.complete = true;
  if (early.waiting) take_early(*early.waiting, early);
  early.waiting = nullptr;
}

void ProcessEndpoint::receive_done(Op& op, const void* data, std::size_t bytes) {
  op.finish(deliver(op, op.peer, data, bytes));
}

void ProcessEndpoint::on_bye(int peer) { said_bye_[static_cast<std::size_t>(peer)] = 1; }

void ProcessEndpoint::on_abort_notice(int reporter, int failed_rank, const std::string& reason) {
  fail(failed_rank, detail::concat("rank ", rank_, ": rank ", failed_rank,
                                   " failed (reported by rank ", reporter, "): ", reason));
}

void ProcessEndpoint::lost(int peer, const std::string& what) {
  if (said_bye(peer) || closed_) {  // an orderly close, or our own
    gone_[static_cast<std::size_t>(peer)] = 1;
    return;
  }
  fail(peer, detail::concat("rank ", rank_, ": connection to rank ", peer, " lost (", what, ")"));
}

void ProcessEndpoint::fail(int failed_rank, const std::string& why) {
  failure_.record(failed_rank, why);
}

// ---- waiting ----------------------------------------------------------------

void ProcessEndpoint::wait_state(RequestState& state) {
  RequestState* const one[] = {&state};
  wait_any_state(one);
}

std::size_t ProcessEndpoint::wait_any_state(std::span<RequestState* const> states) {
  Clock& wall = wall_clock();
  const double started = wall.now();
  const double deadline = started + seconds(options_.timeout);
  auto over = [&] { return first_delivered(states) < states.size() || failed() || closed_; };
  // Poll without sleeping first, yielding the core between polls: a message
  // that arrives within `spin` is taken without putting this process to
  // sleep and waking it again, which costs tens of microseconds (more on a
  // virtual machine, whose idle vCPU halts). Yielding lets a process that
  // shares the core run meanwhile, so an oversubscribed machine loses little
  // to the polling; MPI's progress engine polls the same way.
  if (options_.spin.count() > 0) {
    const double spin_until = std::min(deadline, wall.now() + seconds(options_.spin));
    while (!over() && wall.now() < spin_until) {
      progress(0);
      if (!over()) sched_yield();
    }
  }
  while (!over() && wall.now() < deadline) progress(deadline);
  const std::size_t pick = first_delivered(states);
  const Op& op = static_cast<Op&>(*states[pick < states.size() ? pick : 0]);
  if (pick < states.size()) {
    if (!op.error.empty()) throw InvariantError(detail::concat("rank ", rank_, ": ", op.error));
    // Shaped: the message is not through the modelled NIC yet. Keep the
    // connections moving meanwhile, so the peers' frames are not held up;
    // this wait is part of the receive's and ends by the same deadline.
    const double until = std::min(op.not_before, deadline);
    while (!failed() && !closed_ && wall.now() < until) progress(until);
    if (failed() || closed_ || wall.now() >= op.not_before) return pick;
  }
  const std::string note = pick < states.size() ? shaped_delay_note(op.not_before, started) : "";
  if (failed() || closed_) throw_failure(op, note);
  // What every connection still had in hand, to tell a lost message from a
  // slow peer.
  const std::string what = timeout_text(rank_, options_.timeout, op,
                                        note + describe_connections() + matcher_.describe());
  GRADEX_DEBUG_LOG(what);
  abort(rank_, what);
  throw TimeoutError(what);
}

void ProcessEndpoint::throw_failure(const Op& op, const std::string& note) {
  const int who = failed() ? failure_.rank() : rank_;
  const std::string why =
      failed() ? failure_.why() : detail::concat("rank ", rank_, ": endpoint already closed");
  // Pass the news on: a peer blocked on this rank learns the root cause
  // now instead of seeing this rank vanish.
  abort(who, why);
  throw PeerLostError(who, detail::concat(why, " (rank ", rank_, " was ", waiting_for(op), note,
                                          ")"));
}

// ---- ending -----------------------------------------------------------------

OutgoingPtr ProcessEndpoint::control_frame(int peer, FrameKind kind, Tag tag,
                                           std::string text) const {
  auto frame = std::make_shared<Outgoing>();
  frame->peer = peer;
  frame->text = std::move(text);
  frame->payload = frame->text.data();
  frame->bytes = frame->text.size();
  FrameHeader h;
  h.kind = kind;
  h.tag = tag;
  h.length = frame->bytes;
  frame->header = h.encode();
  return frame;
}

void ProcessEndpoint::close() {
  if (closed_) return;
  if (!connected_) {  // never connected: nothing to say
    closed_ = true;
    disconnect(/*orderly=*/true);
    return;
  }
  if (failed()) return abort(failure_.rank(), failure_.why());
  for (int p = 0; p < size_; ++p) {
    if (p != rank_ && !gone(p)) write(control_frame(p, FrameKind::bye, 0, {}));
  }
  // Until every goodbye is written and every peer's has been read (or the
  // timeout): a peer still sending to us must not see us vanish.
  const double deadline = wall_clock().now() + seconds(options_.timeout);
  auto finished = [&] {
    if (failed()) return true;
    for (int p = 0; p < size_; ++p) {
      if (p != rank_ && !gone(p) && !said_bye(p)) return false;
    }
    return flushed();
  };
  while (!finished() && wall_clock().now() < deadline) progress(deadline);
  closed_ = true;
  disconnect(/*orderly=*/true);
}

void ProcessEndpoint::abort(int failed_rank, const std::string& why) noexcept {
  try {
    fail(failed_rank, why);
    if (closed_) return;
    closed_ = true;
    const std::string reason = why.substr(0, wire::kMaxReasonBytes);
    for (int p = 0; p < size_; ++p) {
      if (p == rank_ || p == failed_rank) continue;
      notify(p, *control_frame(p, FrameKind::abort, static_cast<Tag>(failed_rank), reason));
    }
    disconnect(/*orderly=*/false);
  } catch (...) {
    // Nothing more can be done for the peers; their timeouts will fire.
  }
}

}  // namespace gradex::transport
