#include "transport/inproc/world.h"

#include <sched.h>
#include <sys/prctl.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/errors.h"

namespace gradex {

namespace {

enum class OpKind { send, recv, recv_reduce };

// One posted operation. Exactly one thread (the one that completes the
// match) moves the data; the owner only waits for `done`.
struct Op final : RequestState {
  OpKind kind = OpKind::send;
  int owner = 0;  // rank that waits on this op
  int peer = 0;
  Tag tag = 0;
  const void* src = nullptr;  // send: the payload
  void* dst = nullptr;        // recv: the landing buffer
  std::size_t bytes = 0;
  Tensor reduce_dst;  // recv_reduce: combine into this
  ReduceOp op = ReduceOp::sum;
  double not_before = 0;  // shaped completion time (clock seconds)
  double arrival = 0;     // send: when the receiver may complete
  // Set (release) under the owner's RankSync mutex, after `error`; read
  // without it by a waiter that polls.
  std::atomic<bool> done{false};
  std::string error;  // set before done when the match was invalid
};

using OpPtr = std::shared_ptr<Op>;

// Unmatched operations addressed to one receiver, keyed by (source, tag);
// FIFO per key gives MPI's non-overtaking order.
struct Mailbox {
  std::mutex mutex;
  std::map<std::pair<int, Tag>, std::deque<OpPtr>> sends;
  std::map<std::pair<int, Tag>, std::deque<OpPtr>> recvs;
};

// Where a rank sleeps while it waits.
struct RankSync {
  std::mutex mutex;
  std::condition_variable cv;
};

class InprocComm;

}  // namespace

struct InprocWorld::Impl {
  int size;
  InprocOptions options;
  std::optional<LinkShaper> shaper;
  std::vector<Mailbox> mailboxes;
  std::vector<RankSync> sync;
  std::vector<std::unique_ptr<InprocComm>> comms;

  std::atomic<bool> aborted{false};
  std::atomic<int> failed{-1};
  std::mutex abort_mutex;
  std::string abort_reason;
  // Transfers between claiming a match and marking it done; a failing rank
  // drains these before unwinding so no copy lands in freed memory.
  std::atomic<int> in_flight{0};

  Impl(int n, InprocOptions opts);
  void complete(Op& op, std::string error = {});
  void transfer(Op& send, Op& recv);
  void drain_transfers() const;
  [[noreturn]] void throw_aborted(int me);
};

namespace {

class InprocComm final : public Comm {
 public:
  InprocComm(InprocWorld::Impl& world, InprocWorld& owner, int rank)
      : world_(world), owner_(owner), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return world_.size; }
  Clock& clock() override { return wall_clock(); }
  std::chrono::milliseconds timeout() const override { return world_.options.timeout; }

 protected:
  std::shared_ptr<RequestState> start_send(int peer, const void* data, std::size_t bytes,
                                           Tag tag) override {
    auto op = std::make_shared<Op>();
    op->kind = OpKind::send;
    op->owner = rank_;
    op->peer = peer;
    op->tag = tag;
    op->src = data;
    op->bytes = bytes;
    if (world_.shaper) {
      const auto t = world_.shaper->reserve(rank_, peer, bytes, clock().now());
      op->not_before = t.sender_free;
      op->arrival = t.arrival;
    }
    post(peer, rank_, op, /*is_send=*/true);
    return op;
  }

  std::shared_ptr<RequestState> start_recv(int peer, void* data, std::size_t bytes,
                                           Tag tag) override {
    auto op = std::make_shared<Op>();
    op->kind = OpKind::recv;
    op->owner = rank_;
    op->peer = peer;
    op->tag = tag;
    op->dst = data;
    op->bytes = bytes;
    post(rank_, peer, op, /*is_send=*/false);
    return op;
  }

  std::shared_ptr<RequestState> start_recv_reduce(int peer, Tensor dst, ReduceOp rop,
                                                  Tag tag) override {
    auto op = std::make_shared<Op>();
    op->kind = OpKind::recv_reduce;
    op->owner = rank_;
    op->peer = peer;
    op->tag = tag;
    op->reduce_dst = dst;
    op->bytes = dst.bytes();
    op->op = rop;
    post(rank_, peer, op, /*is_send=*/false);
    return op;
  }

  void wait_state(RequestState& state) override {
    auto& op = static_cast<Op&>(state);
    RankSync& sync = world_.sync[static_cast<std::size_t>(rank_)];
    const double started = wall_clock().now();
    const auto deadline = std::chrono::steady_clock::now() + world_.options.timeout;
    if (!poll(op, deadline)) {
      std::unique_lock lock(sync.mutex);
      sync.cv.wait_until(lock, deadline,
                         [&] { return op.done.load() || world_.aborted.load(); });
      if (!op.done.load()) {
        lock.unlock();
        if (world_.aborted.load()) world_.throw_aborted(rank_);
        time_out(op, "");
      }
    }
    if (world_.aborted.load() && !op.done.load()) world_.throw_aborted(rank_);
    if (!op.error.empty()) throw InvariantError(op.error);
    // Shaped: the message is not through the modelled NIC yet. That wait
    // is part of this one and ends by the same deadline.
    const double timeout_s = std::chrono::duration<double>(world_.options.timeout).count();
    if (op.not_before > 0 && !sleep_until_by(op.not_before, started + timeout_s)) {
      time_out(op, shaped_delay_note(op.not_before, started));
    }
  }

 private:
  [[noreturn]] void time_out(const Op& op, const std::string& note) {
    const std::string what = detail::concat(
        "rank ", rank_, ": timed out after ", world_.options.timeout.count(), " ms waiting to ",
        op.kind == OpKind::send ? "send to" : "receive from", " rank ", op.peer, " (tag ",
        op.tag, ", ", op.bytes, " bytes)", note);
    owner_.abort(rank_, what);
    world_.drain_transfers();
    throw TimeoutError(what);
  }

  // Polls `op` for up to InprocOptions::spin, yielding the core between
  // polls, and says whether the wait is over (done or aborted). A message
  // that lands within the spin costs no sleep and no wake-up, which on a
  // VM go through the hypervisor (the README's "Waits" measures both).
  // Yielding lets any rank that shares the core run first, so a poll never
  // keeps a rank with work to do off its core.
  bool poll(const Op& op, std::chrono::steady_clock::time_point deadline) const {
    const auto until = std::min(deadline, std::chrono::steady_clock::now() + world_.options.spin);
    while (true) {
      if (op.done.load(std::memory_order_acquire) || world_.aborted.load()) return true;
      if (std::chrono::steady_clock::now() >= until) return false;
      sched_yield();
    }
  }

  // Matches `op` against the opposite queue of receiver `dst_rank`'s mailbox
  // for messages from `src_rank`, or queues it.
  void post(int dst_rank, int src_rank, const OpPtr& op, bool is_send) {
    Mailbox& box = world_.mailboxes[static_cast<std::size_t>(dst_rank)];
    OpPtr match;
    {
      std::lock_guard lock(box.mutex);
      if (world_.aborted.load()) world_.throw_aborted(rank_);
      const auto key = std::make_pair(src_rank, op->tag);
      auto& opposite = is_send ? box.recvs : box.sends;
      auto it = opposite.find(key);
      if (it != opposite.end() && !it->second.empty()) {
        match = std::move(it->second.front());
        it->second.pop_front();
        if (it->second.empty()) opposite.erase(it);
        world_.in_flight.fetch_add(1);
      } else {
        (is_send ? box.sends : box.recvs)[key].push_back(op);
        return;
      }
    }
    if (is_send) {
      world_.transfer(*op, *match);
    } else {
      world_.transfer(*match, *op);
    }
    world_.in_flight.fetch_sub(1);
  }

  InprocWorld::Impl& world_;
  InprocWorld& owner_;
  int rank_;
};

}  // namespace

InprocWorld::Impl::Impl(int n, InprocOptions opts)
    : size(n), options(std::move(opts)), mailboxes(static_cast<std::size_t>(n)),
      sync(static_cast<std::size_t>(n)) {
  if (options.shaping) {
    GRADEX_ENFORCE_EQ(options.shaping->endpoints(), n, "shaping topology size");
    if (options.shaping->shaped()) shaper.emplace(*options.shaping);
  }
}

void InprocWorld::Impl::complete(Op& op, std::string error) {
  RankSync& s = sync[static_cast<std::size_t>(op.owner)];
  {
    std::lock_guard lock(s.mutex);
    op.error = std::move(error);
    op.done.store(true, std::memory_order_release);
  }
  s.cv.notify_all();
}

void InprocWorld::Impl::transfer(Op& send, Op& recv) {
  if (send.bytes != recv.bytes) {
    const std::string what = detail::concat(
        "message size mismatch: rank ", send.owner, " sent ", send.bytes, " bytes to rank ",
        recv.owner, " which expected ", recv.bytes, " bytes (tag ", send.tag, ")");
    complete(send, what);
    complete(recv, what);
    return;
  }
  if (send.bytes > 0) {
    if (recv.kind == OpKind::recv_reduce) {
      const Tensor& d = recv.reduce_dst;
      reduce_into(d.data, send.src, d.count, d.dtype, recv.op);
    } else {
      std::memcpy(recv.dst, send.src, send.bytes);
    }
  }
  recv.not_before = send.arrival;
  complete(send);
  complete(recv);
}

void InprocWorld::Impl::drain_transfers() const {
  while (in_flight.load() > 0) std::this_thread::yield();
}

void InprocWorld::Impl::throw_aborted(int me) {
  drain_transfers();
  std::string reason;
  {
    std::lock_guard lock(abort_mutex);
    reason = abort_reason;
  }
  const int who = failed.load();
  throw PeerLostError(who, detail::concat("rank ", me, ": peer rank ", who, " failed: ", reason));
}

InprocWorld::InprocWorld(int size, InprocOptions options) {
  GRADEX_ENFORCE(size >= 1, "an in-process world needs at least one rank, got ", size);
  impl_ = std::make_unique<Impl>(size, std::move(options));
  for (int r = 0; r < size; ++r) {
    impl_->comms.push_back(std::make_unique<InprocComm>(*impl_, *this, r));
  }
}

InprocWorld::~InprocWorld() = default;

int InprocWorld::size() const { return impl_->size; }

Comm& InprocWorld::comm(int rank) {
  GRADEX_ENFORCE(rank >= 0 && rank < impl_->size, "rank ", rank, " out of range");
  return *impl_->comms[static_cast<std::size_t>(rank)];
}

int InprocWorld::failed_rank() const { return impl_->failed.load(); }

void InprocWorld::abort(int failed_rank, const std::string& why) noexcept {
  try {
    {
      std::lock_guard lock(impl_->abort_mutex);
      if (impl_->aborted.load()) return;
      impl_->abort_reason = why;
      impl_->failed.store(failed_rank);
    }
    // Set the flag under every mailbox lock so no new match is claimed
    // after it, then wake every waiter.
    for (Mailbox& box : impl_->mailboxes) {
      std::lock_guard lock(box.mutex);
      impl_->aborted.store(true);
    }
    for (RankSync& s : impl_->sync) {
      std::lock_guard lock(s.mutex);
      s.cv.notify_all();
    }
  } catch (...) {
    impl_->aborted.store(true);
  }
}

void run_ranks(InprocWorld& world, const std::function<void(Comm&)>& body) {
  const int n = world.size();
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      // Shaped links sleep until a message's arrival time; Linux's default
      // 50 us timer slack would add that much to every such sleep.
      prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
      try {
        body(world.comm(r));
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
        world.abort(r, e.what());
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
        world.abort(r, "unknown exception");
      }
    });
  }
  for (auto& t : threads) t.join();
  const int root = world.failed_rank();
  if (root >= 0 && errors[static_cast<std::size_t>(root)]) {
    std::rethrow_exception(errors[static_cast<std::size_t>(root)]);
  }
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace gradex
