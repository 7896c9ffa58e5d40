#include "common/comm.h"

#include <array>
#include <optional>
#include <vector>

#include "common/errors.h"
#include "common/topology.h"

namespace gradex {

namespace {
// Comm::request_in_wait for the length of one wait, then what it was.
class InWait {
 public:
  InWait(const Request*& slot, const Request* request) : slot_(slot), before_(slot) {
    slot_ = request;
  }
  ~InWait() { slot_ = before_; }
  InWait(const InWait&) = delete;
  InWait& operator=(const InWait&) = delete;

 private:
  const Request*& slot_;
  const Request* before_;
};
}  // namespace

Traffic& Traffic::operator+=(const Traffic& o) {
  bytes_sent += o.bytes_sent;
  bytes_received += o.bytes_received;
  messages_sent += o.messages_sent;
  messages_received += o.messages_received;
  return *this;
}

void Comm::check_peer(int peer, const char* what) const {
  if (peer < 0 || peer >= size()) {
    throw InvariantError(detail::concat("rank ", rank(), ": ", what, " to invalid peer ", peer,
                                        " (group size ", size(), ")"));
  }
}

Request Comm::isend(int peer, const void* data, std::size_t bytes, Tag tag) {
  check_peer(peer, "send");
  Request r;
  r.state_ = start_send(peer, data, bytes, tag);
  if (peer != rank()) {
    traffic_.bytes_sent += bytes;
    traffic_.messages_sent += 1;
  }
  return r;
}

Request Comm::irecv(int peer, void* data, std::size_t bytes, Tag tag) {
  check_peer(peer, "receive");
  Request r;
  r.state_ = start_recv(peer, data, bytes, tag);
  if (peer != rank()) {
    traffic_.bytes_received += bytes;
    traffic_.messages_received += 1;
  }
  return r;
}

Request Comm::irecv_reduce(int peer, Tensor dst, ReduceOp op, Tag tag) {
  check_peer(peer, "receive");
  Request r;
  r.state_ = start_recv_reduce(peer, dst, op, tag);
  if (r.state_ == nullptr && dst.phantom()) {
    // Sizes only: the bytes are accounted, nothing is combined.
    r.state_ = start_recv(peer, nullptr, dst.bytes(), tag);
  } else if (r.state_ == nullptr) {
    // Generic path: land the bytes in scratch memory, combine after the wait.
    auto scratch = std::make_shared<std::vector<std::byte>>(dst.bytes());
    r.state_ = start_recv(peer, scratch->data(), scratch->size(), tag);
    r.state_->keep_alive = scratch;
    r.state_->then = std::make_unique<std::function<void()>>([scratch, dst, op] {
      reduce_into(dst.data, scratch->data(), dst.count, dst.dtype, op);
    });
  }
  if (peer != rank()) {
    traffic_.bytes_received += dst.bytes();
    traffic_.messages_received += 1;
  }
  return r;
}

void Comm::wait(Request& request) {
  if (request.state_ == nullptr) return;
  auto state = std::move(request.state_);
  request.state_ = nullptr;
  const InWait in_wait(request_in_wait_, &request);
  wait_state(*state);
  if (state->then) {
    const auto then = std::move(state->then);
    (*then)();
  }
}

void Comm::wait_state_of(Comm& comm, RequestState& state) const {
  const InWait in_wait(comm.request_in_wait_, request_in_wait_);
  comm.wait_state(state);
}

void Comm::wait_all(std::span<Request> requests) {
  for (Request& r : requests) wait(r);
}

std::size_t Comm::wait_any(std::span<Request> requests) {
  // The pending ones, in place for the usual few (several rings driven at
  // once wait on one request each; a PS round on the oldest 16 of each of
  // its streams): a wait per message allocates nothing.
  constexpr std::size_t kInPlace = 64;
  std::array<RequestState*, kInPlace> states_in_place;
  std::array<std::size_t, kInPlace> index_in_place;
  std::vector<RequestState*> states_beyond;
  std::vector<std::size_t> index_beyond;
  const bool in_place = requests.size() <= kInPlace;
  if (!in_place) {
    states_beyond.resize(requests.size());
    index_beyond.resize(requests.size());
  }
  const std::span<RequestState*> states = in_place ? std::span<RequestState*>(states_in_place)
                                                   : std::span<RequestState*>(states_beyond);
  const std::span<std::size_t> index = in_place ? std::span<std::size_t>(index_in_place)
                                                : std::span<std::size_t>(index_beyond);
  std::size_t pending = 0;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].state_ == nullptr) continue;
    states[pending] = requests[i].state_.get();
    index[pending] = i;
    ++pending;
  }
  if (pending == 0) {
    throw InvariantError(detail::concat("rank ", rank(), ": wait_any with no pending request"));
  }
  // One pending: nothing to choose, a plain wait.
  const std::size_t done = pending == 1 ? index[0] : index[wait_any_state(states.first(pending))];
  wait(requests[done]);
  return done;
}

void Comm::send(int peer, const void* data, std::size_t bytes, Tag tag) {
  Request r = isend(peer, data, bytes, tag);
  wait(r);
}

void Comm::recv(int peer, void* data, std::size_t bytes, Tag tag) {
  Request r = irecv(peer, data, bytes, tag);
  wait(r);
}

void Comm::barrier() {
  const int n = size();
  const int me = rank();
  Tag round = 0;
  // Round k: signal me + 2^k, hear from me - 2^k; after ceil(log2 n) rounds
  // every endpoint has (transitively) heard from every other.
  for (int dist = 1; dist < n; dist *= 2, ++round) {
    Request s = isend((me + dist) % n, nullptr, 0, kReservedTagBase + round);
    Request r = irecv((me - dist + n) % n, nullptr, 0, kReservedTagBase + round);
    wait(r);
    wait(s);
  }
}

// ---- SubComm ---------------------------------------------------------------

namespace {
// Where each level's field starts (comm.h's tag layout).
constexpr int kSecondLevelShift = 22;
constexpr int kFirstLevelShift = 42;
}  // namespace

SubComm::SubComm(Comm& parent, GroupMembers members, std::uint32_t tag_space)
    : parent_(parent), members_(std::move(members)) {
  GRADEX_ENFORCE_LT(tag_space, kSubCommSpaces, "sub-group tag space too large");
  if (const auto* outer = dynamic_cast<const SubComm*>(&parent)) depth_ = outer->depth_ + 1;
  GRADEX_ENFORCE(depth_ <= 2, "sub-groups nest at most two deep");
  tag_base_ = Tag{tag_space + 1u} << (depth_ == 1 ? kFirstLevelShift : kSecondLevelShift);
  const std::optional<int> outside = members_.outside(parent.size());
  GRADEX_ENFORCE(!outside, "member ", outside.value_or(0), " outside the parent group");
  rank_ = members_.position_of(parent.rank());
  GRADEX_ENFORCE(rank_ >= 0, "parent rank ", parent.rank(), " is not a member of the sub-group");
}

Tag SubComm::shift(Tag tag) const {
  // A first-level group also carries its second-level groups' tags.
  const Tag limit = Tag{1} << (depth_ == 1 ? kFirstLevelShift : kSecondLevelShift);
  GRADEX_ENFORCE_LT(tag & (kReservedTagBase - 1), limit, "tag too large for a sub-group");
  return tag_base_ + tag;
}

std::shared_ptr<RequestState> SubComm::start_send(int peer, const void* data, std::size_t bytes,
                                                  Tag tag) {
  Request posted = parent_.isend(parent_rank(peer), data, bytes, shift(tag));
  return take_state(posted);
}

std::shared_ptr<RequestState> SubComm::start_recv(int peer, void* data, std::size_t bytes,
                                                  Tag tag) {
  Request posted = parent_.irecv(parent_rank(peer), data, bytes, shift(tag));
  return take_state(posted);
}

std::shared_ptr<RequestState> SubComm::start_recv_reduce(int peer, Tensor dst, ReduceOp op,
                                                         Tag tag) {
  Request posted = parent_.irecv_reduce(parent_rank(peer), dst, op, shift(tag));
  return take_state(posted);
}

// The parent's states are handed on as they are: the parent's transport
// knows them, and a continuation in one runs in the wait() on this group.
void SubComm::wait_state(RequestState& state) { wait_state_of(parent_, state); }

std::size_t SubComm::wait_any_state(std::span<RequestState* const> states) {
  return wait_any_state_of(parent_, states);
}

}  // namespace gradex
