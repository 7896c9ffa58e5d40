// The one matching engine every transport uses (in-process threads, tcp,
// zmq and the simulator): what a posted operation is, how receives meet
// messages, how a message lands in a receive, how a group endpoint records
// its first failure, and what a wait that runs out of time says.
//
// Matching follows Comm's contract (common/comm.h): a receive from peer p
// with tag t takes the oldest unmatched message from p with tag t, and a
// message takes the oldest receive posted for it: first in, first out per
// (peer, tag), MPI's non-overtaking rule. The sizes must agree exactly.
//
// A transport chooses what stands on each side. The process transports
// match arrived messages against posted receives; the in-process transport
// and the simulator match the posted sends themselves (rendezvous), so the
// receiver copies straight from the sender's buffer.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/comm.h"

namespace gradex::transport {

enum class OpKind { send, recv, recv_reduce };

// One posted send, receive or receive-reduce. Its transport moves the data
// and then sets `done` (release, after `error`); the rank that posted it
// waits for `done`.
struct Op : RequestState {
  // First, next to the base's continuation: a wait reads both, and in a
  // simulated world of thousands of ranks each line it reads is a miss.
  std::atomic<bool> done{false};
  OpKind kind = OpKind::send;
  int owner = 0;  // the rank that posted it
  int peer = 0;   // where it goes to or comes from
  Tag tag = 0;
  const void* src = nullptr;  // send: the payload (null: a phantom buffer)
  void* dst = nullptr;        // recv: where the message lands
  std::size_t bytes = 0;
  Tensor reduce_dst;  // recv_reduce: combined into this
  ReduceOp rop = ReduceOp::sum;
  // Shaped runs: the clock time before which the wait may not end (the
  // modelled NIC has not delivered the bytes yet).
  double not_before = 0;
  std::string error;  // set before `done` when the match was invalid

  bool finished() const { return done.load(std::memory_order_acquire); }
  void finish() { done.store(true, std::memory_order_release); }
  void finish(std::string why) {
    error = std::move(why);
    finish();
  }
};
using OpPtr = std::shared_ptr<Op>;

// For a wait on several operations (Comm::wait_any): of those that have
// finished, the one the shaped network delivers first (the smallest
// not_before); states.size() when none has. Every state is an Op.
std::size_t first_delivered(std::span<RequestState* const> states);

// Builds a posted operation; `T` is Op or a transport's extension of it,
// allocated by `alloc` (the simulator reuses its operations' memory).
template <class T = Op, class Alloc = std::allocator<T>>
std::shared_ptr<T> make_op(OpKind kind, int owner, int peer, Tag tag, std::size_t bytes,
                           const Alloc& alloc = {}) {
  auto op = std::allocate_shared<T>(alloc);
  op->kind = kind;
  op->owner = owner;
  op->peer = peer;
  op->tag = tag;
  op->bytes = bytes;
  return op;
}
template <class T = Op, class Alloc = std::allocator<T>>
std::shared_ptr<T> make_send(int owner, int peer, const void* data, std::size_t bytes, Tag tag,
                             const Alloc& alloc = {}) {
  auto op = make_op<T>(OpKind::send, owner, peer, tag, bytes, alloc);
  op->src = data;
  return op;
}
template <class T = Op, class Alloc = std::allocator<T>>
std::shared_ptr<T> make_recv(int owner, int peer, void* data, std::size_t bytes, Tag tag,
                             const Alloc& alloc = {}) {
  auto op = make_op<T>(OpKind::recv, owner, peer, tag, bytes, alloc);
  op->dst = data;
  return op;
}
template <class T = Op, class Alloc = std::allocator<T>>
std::shared_ptr<T> make_recv_reduce(int owner, int peer, Tensor dst, ReduceOp rop, Tag tag,
                                    const Alloc& alloc = {}) {
  auto op = make_op<T>(OpKind::recv_reduce, owner, peer, tag, dst.bytes(), alloc);
  op->reduce_dst = dst;
  op->rop = rop;
  return op;
}

// A first-in-first-out queue that allocates nothing while it holds one
// entry: a (peer, tag) queue mostly holds one at a time, where a
// std::deque would allocate over 500 bytes up front (a million of them in
// a simulated all-to-all of 1,024 ranks). The front is kept in the queue
// itself, so taking a lone entry reads no memory elsewhere (in a large
// simulation that memory is cold: a miss per message).
template <class T>
class Fifo {
 public:
  bool empty() const { return !has_front_; }
  std::size_t size() const { return (has_front_ ? 1 : 0) + items_.size() - head_; }
  T& front() { return front_; }
  const T* front_if_any() const { return has_front_ ? &front_ : nullptr; }
  // The entry behind the front, which becomes the front when it is taken
  // (held apart from the queue, in memory a large simulation finds cold).
  const T* second_if_any() const { return head_ < items_.size() ? &items_[head_] : nullptr; }
  void push_back(T item) {
    if (has_front_) {
      items_.push_back(std::move(item));
    } else {
      front_ = std::move(item);
      has_front_ = true;
    }
  }
  void pop_front() {
    if (head_ == items_.size()) {
      front_ = T{};
      has_front_ = false;
      return;
    }
    front_ = std::move(items_[head_]);
    if (++head_ == items_.size()) {
      items_.clear();
      head_ = 0;
    } else if (head_ >= kCompactAfter && 2 * head_ >= items_.size()) {
      // Taken entries are dropped once they are half the vector.
      items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }

 private:
  static constexpr std::size_t kCompactAfter = 32;
  T front_{};
  bool has_front_ = false;
  std::vector<T> items_;  // behind the front
  std::size_t head_ = 0;
};

// Posted receives and the messages that reached this endpoint before
// theirs, each in first-in-first-out order per (peer, tag). `Receive` and
// `Arrival` are whatever the transport keeps on each side (a posted
// receive; an arrived message, or a posted send for rendezvous).
// Not thread-safe: a transport that shares one between threads locks it.
//
// With `KeepEmptyQueues` a (peer, tag) queue that empties is kept for the
// next message instead of erased, which saves a map node and a queue's
// buffer per message: for endpoints that use a few (peer, tag) pairs over
// and over (the simulator's ranks). Past kKeptQueues queues on a side
// an emptied one is erased after all, so that a scheme with a tag per
// block (the tree's block collectives, which use each of O(n) pairs once)
// keeps no more than that. The queue last used on each side is
// remembered and found again without walking the map (a ring's rank hears
// from one peer on one tag at a time).
template <class Receive, class Arrival, bool KeepEmptyQueues = false>
class Matcher {
 public:
  Matcher() = default;
  // Movable (the map's nodes, and so the remembered queues, move with it),
  // not copyable (a copy would remember the original's queues).
  Matcher(Matcher&&) noexcept = default;
  Matcher& operator=(Matcher&&) noexcept = default;
  Matcher(const Matcher&) = delete;
  Matcher& operator=(const Matcher&) = delete;

  // The oldest receive posted for a message from `peer` with `tag`, taken
  // off the queue; nullopt if none is posted.
  std::optional<Receive> take_receive(int peer, Tag tag) {
    return take(receives_, last_receives_, {peer, tag});
  }
  // The oldest message from `peer` with `tag` that no receive took yet.
  std::optional<Arrival> take_arrival(int peer, Tag tag) {
    return take(arrivals_, last_arrivals_, {peer, tag});
  }
  void add_receive(int peer, Tag tag, Receive r) {
    queue(receives_, last_receives_, {peer, tag}).push_back(std::move(r));
  }
  void add_arrival(int peer, Tag tag, Arrival a) {
    queue(arrivals_, last_arrivals_, {peer, tag}).push_back(std::move(a));
  }

  // A receive is posted: the message it takes, or nullopt (it is queued).
  std::optional<Arrival> post_receive(int peer, Tag tag, Receive r) {
    auto a = take_arrival(peer, tag);
    if (!a) add_receive(peer, tag, std::move(r));
    return a;
  }
  // A message arrived: the receive that takes it, or nullopt (it is kept).
  std::optional<Receive> post_arrival(int peer, Tag tag, Arrival a) {
    auto r = take_receive(peer, tag);
    if (!r) add_arrival(peer, tag, std::move(a));
    return r;
  }

  // The queue a receive was last posted to or taken from (KeepEmptyQueues
  // only; else nullptr), whose front is the receive its endpoint waits for
  // next in a ring: what a simulator asks the cache for ahead of time.
  const Fifo<Receive>* last_receive_queue() const { return last_receives_.queue; }
  // The same for messages that arrived before their receive: a receive
  // that is posted looks there first.
  const Fifo<Arrival>* last_arrival_queue() const { return last_arrivals_.queue; }

  std::size_t receives() const { return count(receives_); }
  // The (peer, tag) queues held on both sides, empty ones included.
  std::size_t kept_queues() const { return receives_.size() + arrivals_.size(); }
  std::size_t arrivals() const { return count(arrivals_); }
  // "; 2 receive(s) posted, 1 message(s) waiting for theirs", for the text
  // of a wait that timed out.
  std::string describe() const {
    return "; " + std::to_string(receives()) + " receive(s) posted, " +
           std::to_string(arrivals()) + " message(s) waiting for theirs";
  }

 private:
  using Key = std::pair<int, Tag>;
  static constexpr std::size_t kKeptQueues = 64;
  // The queue last found on one side and its key (KeepEmptyQueues only).
  template <class T>
  struct Last {
    Key key{-1, 0};
    Fifo<T>* queue = nullptr;
  };
  template <class T>
  static Fifo<T>* find(std::map<Key, Fifo<T>>& queues, Last<T>& last, const Key& key) {
    if constexpr (KeepEmptyQueues) {
      if (last.queue != nullptr && last.key == key) return last.queue;
    }
    auto it = queues.find(key);
    if (it == queues.end()) return nullptr;
    if constexpr (KeepEmptyQueues) last = {key, &it->second};
    return &it->second;
  }
  template <class T>
  static Fifo<T>& queue(std::map<Key, Fifo<T>>& queues, Last<T>& last, const Key& key) {
    if (Fifo<T>* q = find(queues, last, key)) return *q;
    Fifo<T>& q = queues[key];
    if constexpr (KeepEmptyQueues) last = {key, &q};
    return q;
  }
  template <class T>
  static std::optional<T> take(std::map<Key, Fifo<T>>& queues, Last<T>& last, const Key& key) {
    if constexpr (KeepEmptyQueues) {
      Fifo<T>* q = find(queues, last, key);
      if (q == nullptr || q->empty()) return std::nullopt;
      std::optional<T> front(std::move(q->front()));
      q->pop_front();
      if (q->empty() && queues.size() > kKeptQueues) {
        queues.erase(key);
        last = {};
      }
      return front;
    } else {
      auto it = queues.find(key);
      if (it == queues.end() || it->second.empty()) return std::nullopt;
      std::optional<T> front(std::move(it->second.front()));
      it->second.pop_front();
      if (it->second.empty()) queues.erase(it);
      return front;
    }
  }
  template <class T>
  static std::size_t count(const std::map<Key, Fifo<T>>& queues) {
    std::size_t n = 0;
    for (const auto& [key, q] : queues) n += q.size();
    return n;
  }

  // The remembered queues first: they are read at every message, the
  // maps only when another queue is wanted, and a simulator's rank reads
  // the matcher's first bytes on the cache lines of its own state.
  Last<Receive> last_receives_;
  Last<Arrival> last_arrivals_;
  std::map<Key, Fifo<Receive>> receives_;
  std::map<Key, Fifo<Arrival>> arrivals_;
};

// What a receive says of a message whose size is not the one it expects.
std::string size_mismatch(int sender, std::size_t sent, const Op& receive);

// Lands a message of `bytes` from `data` in receive `op`: copied for a
// receive, combined element-wise for a receive-reduce (from memory of any
// alignment). A phantom side (null data or destination) moves nothing. A
// size that differs from the receive's is returned as the error text and
// nothing is written. Does not set `done`: the transport completes the
// operation its own way (and may have to wake the owner).
std::string deliver(const Op& op, int sender, const void* data, std::size_t bytes);

// The first failure of a group; later ones are its consequences and are
// ignored. Safe from any thread.
class FirstFailure {
 public:
  // Records the failure unless one is recorded; true if this one was first.
  bool record(int failed_rank, std::string why);
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  int rank() const;
  std::string why() const;

 private:
  std::atomic<bool> failed_{false};
  mutable std::mutex mutex_;
  int rank_ = -1;
  std::string why_;
};

// "waiting to receive from rank 3 (tag 7, 4096 bytes)"
std::string waiting_for(const Op& op);
// "rank 1: timed out after 30000 ms waiting to ..." plus `details` (what
// the transport still had in hand, or the shaped delay).
std::string timeout_text(int rank, std::chrono::milliseconds timeout, const Op& op,
                         const std::string& details = {});

}  // namespace gradex::transport
