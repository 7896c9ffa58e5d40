// The skeleton of a process transport (tcp, zmq): everything an endpoint of
// a group of processes does that does not depend on how bytes cross the
// wire, written once. As ps-lite's Van and Gloo's Context/Pair split do,
// a transport fills in a handful of primitives:
//   - write(frame)     hand a frame (header, then payload) to the wire;
//   - progress(until)  move bytes on every connection, at most until then;
//   - notify(peer, f)  a short control frame now, never blocking (aborts);
//   - flushed()        nothing is left to write;
//   - disconnect()     close every connection;
// and reports what arrives (receive_for, keep_early, early_complete,
// receive_done, on_bye, on_abort_notice, lost, fail).
//
// The skeleton owns the rest: matching (transport/matching.h), the send
// and receive posts, the wait (spin, then progress until the deadline, then
// the shaped delay), link shaping's port booking (transport/port_shaper.h),
// the goodbye protocol of close(), and the abort protocol: the first
// failure wins, every peer hears of it, every wait throws.
//
// No I/O thread: the thread that uses the endpoint drives every connection
// whenever it waits, so sends and receives to all peers progress together
// during every wait, as in MPI, and a message costs one wake-up of the
// receiving process, not several thread hand-offs.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "transport/group_endpoint.h"
#include "transport/matching.h"
#include "transport/port_shaper.h"
#include "transport/wire/frame.h"

namespace gradex::transport {

// A message that reached the endpoint before its receive was posted, in
// memory the transport chose (`storage` keeps it alive). A transport that
// streams a frame in (tcp) fills `data` after keep_early() and says so with
// early_complete(); one that receives whole messages (zmq) keeps them
// complete at once.
struct Early {
  std::shared_ptr<void> storage;
  std::byte* data = nullptr;
  std::size_t bytes = 0;
  double arrival = 0;     // shaped: when the modelled NIC delivers it
  bool complete = false;  // every byte is in
  OpPtr waiting;          // a receive posted while the bytes were still coming
};
using EarlyPtr = std::shared_ptr<Early>;

// One frame to write: a data frame (whose send `op` completes once the
// transport no longer needs the payload) or a control frame (bye, abort:
// `op` is null and the payload is `text`).
struct Outgoing {
  int peer = 0;
  wire::FrameHeader::Bytes header{};
  const void* payload = nullptr;
  std::size_t bytes = 0;
  OpPtr op;
  std::string text;
};
using OutgoingPtr = std::shared_ptr<Outgoing>;

class ProcessEndpoint : public GroupEndpoint {
 public:
  ProcessEndpoint(int rank, int size, TransportOptions options);

  int rank() const final { return rank_; }
  int size() const final { return size_; }
  Clock& clock() final;
  std::chrono::milliseconds timeout() const final { return options_.timeout; }
  const Topology* shaping() const final { return shaper_ ? &shaper_->topology() : nullptr; }

  void close() final;
  void abort(int failed_rank, const std::string& why) noexcept final;
  void set_shaping(const std::optional<Topology>& topology) final;

 protected:
  std::shared_ptr<RequestState> start_send(int peer, const void* data, std::size_t bytes,
                                           Tag tag) final;
  std::shared_ptr<RequestState> start_recv(int peer, void* data, std::size_t bytes,
                                           Tag tag) final;
  std::shared_ptr<RequestState> start_recv_reduce(int peer, Tensor dst, ReduceOp op,
                                                  Tag tag) final;
  void wait_state(RequestState& state) final;
  std::size_t wait_any_state(std::span<RequestState* const> states) final;

  // ---- the primitives a transport fills --------------------------------
  // Hands `frame` to the wire to frame->peer; completes frame->op (finish())
  // once the payload's memory is no longer needed, now or in progress().
  virtual void write(const OutgoingPtr& frame) = 0;
  // Moves bytes on every connection until something happened or `until`
  // (wall-clock seconds) passed; 0 polls once without blocking.
  virtual void progress(double until) = 0;
  // True when no frame is waiting to be written.
  virtual bool flushed() const = 0;
  // Best effort, never blocks: tells `peer` of a failure (an abort frame).
  virtual void notify(int peer, const Outgoing& frame) noexcept = 0;
  // Closes every connection; `orderly` after a completed goodbye.
  virtual void disconnect(bool orderly) noexcept = 0;
  // What the connections still had in hand, for a timeout's text.
  virtual std::string describe_connections() const { return {}; }

  // ---- what a transport reports ------------------------------------------
  // Where a data frame from a peer goes: the receive posted for it (its
  // shaped arrival set), or nowhere yet (`receive` null: keep it with
  // keep_early), or nowhere at all (`discard`: the posted receive expects
  // another size and was completed with the error; read and drop the
  // payload).
  struct Landing {
    OpPtr receive;
    double arrival = 0;  // shaped: when the modelled NIC delivers it
    bool discard = false;
  };
  // A data frame's header arrived from `peer`: books the modelled ingress
  // port and finds its receive.
  Landing land(int peer, const wire::FrameHeader& h);
  // Keeps a message no receive is posted for yet.
  void keep_early(int peer, Tag tag, const EarlyPtr& early);
  // Every byte of a kept message is in: a receive posted meanwhile takes it.
  void early_complete(Early& early);
  // A whole message for a posted receive (from land()): copied or
  // combined, then the receive completes.
  static void receive_done(Op& op, const void* data, std::size_t bytes);
  void on_bye(int peer);
  void on_abort_notice(int reporter, int failed_rank, const std::string& reason);
  // The connection to `peer` ended: a failure unless it said goodbye (or
  // this endpoint is closing).
  void lost(int peer, const std::string& what);
  // The first failure wins; later ones are consequences of it.
  void fail(int failed_rank, const std::string& why);

  bool failed() const { return failure_.failed(); }
  bool closed() const { return closed_; }
  bool said_bye(int peer) const { return said_bye_[static_cast<std::size_t>(peer)] != 0; }
  // A peer that closed its end after its goodbye reads nothing more.
  bool gone(int peer) const { return gone_[static_cast<std::size_t>(peer)] != 0; }
  const TransportOptions& options() const { return options_; }
  // connect() succeeded: sends may go out.
  void mark_connected() { connected_ = true; }
  bool connected() const { return connected_; }

 private:
  void post_receive(const OpPtr& op);
  static void take_early(Op& op, const Early& early);
  OutgoingPtr control_frame(int peer, wire::FrameKind kind, Tag tag, std::string text) const;
  [[noreturn]] void throw_failure(const Op& op, const std::string& note);

  int rank_;
  int size_;
  TransportOptions options_;
  std::optional<PortShaper> shaper_;
  Matcher<OpPtr, EarlyPtr> matcher_;
  FirstFailure failure_;
  std::vector<char> said_bye_;
  std::vector<char> gone_;
  bool connected_ = false;
  bool closed_ = false;
};

}  // namespace gradex::transport
