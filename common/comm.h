// The point-to-point interface every transport offers, and that every scheme
// is written against: tagged non-blocking sends and receives within one
// group of endpoints, waits that time out, and per-endpoint traffic counts.
//
// Matching: a receive from peer p with tag t matches the oldest unmatched
// send from p to this endpoint with tag t (MPI's non-overtaking rule). The
// sizes must agree exactly. Buffers belong to the transport from the post
// until wait() returns: a send buffer must not be written, a receive buffer
// must not be read, and two outstanding receives must not target
// overlapping memory. A receive may land in the memory of a pending send
// only when the incoming message is causally after that send was taken
// (a reply to it, as a PS pull answers the push).
#pragma once

#include <atomic>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/dtype.h"
#include "common/group_members.h"
#include "common/reduce.h"
#include "common/topology.h"

namespace gradex {

using Tag = std::uint64_t;

// How long any single wait may block before it throws TimeoutError, and
// how long a wait polls (yielding the core) before it sleeps, unless a
// scenario or a flag says otherwise: the one place these defaults live.
inline constexpr std::chrono::milliseconds kDefaultTimeout{30'000};
inline constexpr std::chrono::microseconds kDefaultSpin{100};
// The longest timeout a scenario or a flag may ask for: an hour.
inline constexpr std::int64_t kMaxTimeoutMs = 3'600'000;

// Tags at or above this value are reserved for gradex's own protocol
// messages (barriers); sub-groups shift user tags below it.
inline constexpr Tag kReservedTagBase = Tag{1} << 62;
// gradex's own gathers to rank 0, each on a tag of its own above the
// barrier's rounds (kReservedTagBase + round), listed here so no two share.
inline constexpr Tag kMeasureGatherTag = kReservedTagBase + (Tag{1} << 20);
inline constexpr Tag kTrainGatherTag = kReservedTagBase + (Tag{2} << 20);
inline constexpr Tag kTraceGatherTag = kReservedTagBase + (Tag{3} << 20);
inline constexpr Tag kPsTrainGatherTag = kReservedTagBase + (Tag{4} << 20);
inline constexpr Tag kRankListTag = kReservedTagBase + (Tag{5} << 20);
inline constexpr Tag kNcclIdTag = kReservedTagBase + (Tag{6} << 20);
// Not a gather: rank 0 telling the ranks a training run leaves idle how far
// it got (runner/idle_ranks.h).
inline constexpr Tag kIdleProgressTag = kReservedTagBase + (Tag{7} << 20);

// Bytes and messages one endpoint moved over links (messages to itself are
// local copies and are not counted).
struct Traffic {
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t messages_sent = 0;
  std::uint64_t messages_received = 0;

  Traffic& operator+=(const Traffic& o);
  bool operator==(const Traffic&) const = default;
};

// Transport-defined state of one posted operation.
class RequestState {
 public:
  virtual ~RequestState() = default;
  // Runs once in the wait() that completes the request, after the transfer
  // (a non-fused receive-reduce's reduction out of its scratch memory).
  // Kept here rather than in the Request, so that a sub-group hands its
  // parent's state on as it is and a Request is one pointer; and behind a
  // pointer, so that the fields a wait reads share a cache line.
  std::unique_ptr<std::function<void()>> then;
  // Memory the operation writes into that nobody else owns (scratch for a
  // non-fused receive-reduce): it lives as long as the operation does, even
  // if the waiting rank unwinds early.
  std::shared_ptr<void> keep_alive;
};

// A handle on a posted send or receive; complete it with Comm::wait.
class Request {
 public:
  Request() = default;
  bool pending() const { return state_ != nullptr; }

 private:
  friend class Comm;
  std::shared_ptr<RequestState> state_;
};

class Comm {
 public:
  virtual ~Comm() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual Clock& clock() = 0;
  // How long any single wait may block before it throws TimeoutError.
  virtual std::chrono::milliseconds timeout() const = 0;
  // True when the transport moves sizes only (a simulator's phantom
  // buffers): schemes then allocate no payload memory of their own.
  virtual bool phantom_payloads() const { return false; }
  // The modelled network this group's messages are timed on (shaped links,
  // the simulator's), if any: what a scheme that chooses by the cost model
  // (auto) must model. A sub-group has none of its own.
  virtual const Topology* shaping() const { return nullptr; }
  // The protocol of the collective this endpoint is running (set by
  // Scheme::run; LinkSpec::protocol_for), nullptr outside one: what its
  // transport times each message with on links that offer several. A
  // sub-group's is its parent's.
  // (Atomic: a process transport's reader thread times arrivals with it.)
  virtual const char* collective_protocol() const { return protocol_.load(std::memory_order_relaxed); }
  virtual void set_collective_protocol(const char* name) {
    protocol_.store(name, std::memory_order_relaxed);
  }
  // Whether the collective this endpoint is running sends to one peer on
  // connections of their own per tag, each in posting order, as a GPU
  // library's channels and tree directions are (set by Scheme::run from
  // Scheme::connection_per_tag), rather than on one connection in posting
  // order. The simulator, which keeps a queue per connection, times
  // messages by it; a process transport has one socket per peer whatever
  // the tags. A sub-group's is its parent's.
  virtual bool connection_per_tag() const { return per_tag_.load(std::memory_order_relaxed); }
  virtual void set_connection_per_tag(bool on) { per_tag_.store(on, std::memory_order_relaxed); }

  Request isend(int peer, const void* data, std::size_t bytes, Tag tag);
  Request irecv(int peer, void* data, std::size_t bytes, Tag tag);
  // Receives dst.count elements from `peer` and combines them into dst
  // (dst = dst op incoming). Transports that can read the sender's memory
  // fuse the copy and the reduction into one pass.
  Request irecv_reduce(int peer, Tensor dst, ReduceOp op, Tag tag);

  // Blocks until the request completes; throws TimeoutError or
  // PeerLostError. A completed (or never-posted) request is a no-op.
  void wait(Request& request);
  void wait_all(std::span<Request> requests);
  // Blocks until one of the pending requests completes, completes it as
  // wait() does and returns its index (MPI_Waitany): a server serving
  // several peers takes whichever message comes first. Throws
  // InvariantError if none is pending, and TimeoutError or PeerLostError
  // as wait() does.
  std::size_t wait_any(std::span<Request> requests);

  void send(int peer, const void* data, std::size_t bytes, Tag tag);
  void recv(int peer, void* data, std::size_t bytes, Tag tag);
  // Every endpoint of the group enters before any leaves (dissemination
  // barrier over zero-byte messages on reserved tags).
  void barrier();

  const Traffic& traffic() const { return traffic_; }
  void reset_traffic() { traffic_ = {}; }
  // Puts back a count taken earlier: what a scheme sends to decide how to
  // run (auto's trials) is not the exchange's traffic.
  void restore_traffic(const Traffic& counted) { traffic_ = counted; }

 protected:
  virtual std::shared_ptr<RequestState> start_send(int peer, const void* data,
                                                   std::size_t bytes, Tag tag) = 0;
  virtual std::shared_ptr<RequestState> start_recv(int peer, void* data, std::size_t bytes,
                                                   Tag tag) = 0;
  // Fused receive-and-reduce; transports that cannot fuse return nullptr and
  // the base class receives into scratch memory and reduces in wait().
  virtual std::shared_ptr<RequestState> start_recv_reduce(int /*peer*/, Tensor /*dst*/,
                                                          ReduceOp /*op*/, Tag /*tag*/) {
    return nullptr;
  }
  virtual void wait_state(RequestState& state) = 0;
  // Blocks until one of `states` (all pending, at least one) has completed,
  // shaped delay included, and returns its index; wait_state() on it then
  // returns at once. Throws as wait_state() does.
  virtual std::size_t wait_any_state(std::span<RequestState* const> states) = 0;
  // For a Comm layered on another (SubComm): the parent's wait_state and
  // wait_any_state, and the state behind a request.
  // The parent is told which request this group's wait() is in.
  void wait_state_of(Comm& comm, RequestState& state) const;
  static std::size_t wait_any_state_of(Comm& comm, std::span<RequestState* const> states) {
    return comm.wait_any_state(states);
  }
  static std::shared_ptr<RequestState> take_state(Request& request) {
    return std::move(request.state_);
  }
  void check_peer(int peer, const char* what) const;
  // The request whose wait() is in progress (wait_state() then waits for
  // its state), else nullptr: where a transport that fetches a rank's
  // state ahead of its turn (the simulator's) learns where the scheme
  // keeps its requests.
  const Request* request_in_wait() const { return request_in_wait_; }

 private:
  Traffic traffic_;
  std::atomic<const char*> protocol_{nullptr};
  std::atomic<bool> per_tag_{false};
  const Request* request_in_wait_ = nullptr;
};

// A view of some endpoints of a parent group as a group of their own: rank i
// here is parent rank members.at(i). Tags are shifted into a private range so
// traffic of different sub-groups (and of the parent) never matches.
// Traffic is counted by the parent only.
//
// A parent endpoint may be listed more than once: it then stands for each
// of those ranks (the simulator's symmetric subset, where simulated rank r
// stands for every rank congruent to r), and is the first of them itself.
//
// Sub-groups nest two deep (a run's group, then a hierarchical scheme's
// node and inter-node groups inside it), each level with a bit field of
// its own, so no two paths through the levels share a tag: bit 62 marks
// gradex's own messages (kReservedTagBase), bits 42-61 hold a first-level
// sub-group's space + 1, bits 22-41 a second level's, and bits 0-21 the tag
// the scheme chose, which must stay below 2^22.
inline constexpr std::uint32_t kSubCommSpaces = (1u << 20) - 1;

class SubComm final : public Comm {
 public:
  // `tag_space` identifies this sub-group among those built concurrently
  // from the same parent (e.g. the node index); it must be below
  // kSubCommSpaces.
  SubComm(Comm& parent, GroupMembers members, std::uint32_t tag_space);

  int rank() const override { return rank_; }
  int size() const override { return members_.size(); }
  Clock& clock() override { return parent_.clock(); }
  std::chrono::milliseconds timeout() const override { return parent_.timeout(); }
  bool phantom_payloads() const override { return parent_.phantom_payloads(); }
  const char* collective_protocol() const override { return parent_.collective_protocol(); }
  void set_collective_protocol(const char* name) override { parent_.set_collective_protocol(name); }
  bool connection_per_tag() const override { return parent_.connection_per_tag(); }
  void set_connection_per_tag(bool on) override { parent_.set_connection_per_tag(on); }
  int parent_rank(int rank) const { return members_.at(rank); }
  Comm& parent() { return parent_; }

 protected:
  std::shared_ptr<RequestState> start_send(int peer, const void* data, std::size_t bytes,
                                           Tag tag) override;
  std::shared_ptr<RequestState> start_recv(int peer, void* data, std::size_t bytes,
                                           Tag tag) override;
  std::shared_ptr<RequestState> start_recv_reduce(int peer, Tensor dst, ReduceOp op,
                                                  Tag tag) override;
  void wait_state(RequestState& state) override;
  std::size_t wait_any_state(std::span<RequestState* const> states) override;

 private:
  Tag shift(Tag tag) const;

  Comm& parent_;
  GroupMembers members_;
  int rank_ = -1;
  int depth_ = 1;  // 1: the parent is no sub-group; 2: it is one
  Tag tag_base_;
};

}  // namespace gradex
