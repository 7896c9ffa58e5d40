#include "transport/inproc/world.h"

#include <sched.h>
#include <sys/prctl.h>

#include <algorithm>
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
#include "transport/matching.h"

namespace gradex {

namespace {

using transport::OpKind;

struct Op final : transport::Op {
  double arrival = 0;  // send: when the shaped link delivers it
};
using OpPtr = std::shared_ptr<Op>;

// Unmatched operations addressed to one receiver: its posted receives, and
// the posted sends no receive took yet (rendezvous: the receive copies
// straight from the sender's buffer). Exactly one thread, the one that
// completes a match, moves the data; the owners only wait for `done`.
struct Mailbox {
  std::mutex mutex;
  transport::Matcher<OpPtr, OpPtr> queues;
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
  TransportOptions options;
  std::optional<LinkShaper> shaper;
  std::vector<Mailbox> mailboxes;
  std::vector<RankSync> sync;
  std::vector<std::unique_ptr<InprocComm>> comms;

  std::atomic<bool> aborted{false};
  transport::FirstFailure failure;
  // Transfers between claiming a match and marking it done; a failing rank
  // drains these before unwinding so no copy lands in freed memory.
  std::atomic<int> in_flight{0};

  Impl(int n, TransportOptions opts);
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
  const Topology* shaping() const override {
    return world_.shaper ? &world_.shaper->topology() : nullptr;
  }

 protected:
  std::shared_ptr<RequestState> start_send(int peer, const void* data, std::size_t bytes,
                                           Tag tag) override {
    auto op = transport::make_send<Op>(rank_, peer, data, bytes, tag);
    if (world_.shaper) {
      const auto t =
          world_.shaper->reserve(rank_, peer, bytes, clock().now(), collective_protocol());
      op->not_before = t.sender_free;
      op->arrival = t.arrival;
    }
    post(op);
    return op;
  }

  std::shared_ptr<RequestState> start_recv(int peer, void* data, std::size_t bytes,
                                           Tag tag) override {
    auto op = transport::make_recv<Op>(rank_, peer, data, bytes, tag);
    post(op);
    return op;
  }

  std::shared_ptr<RequestState> start_recv_reduce(int peer, Tensor dst, ReduceOp rop,
                                                  Tag tag) override {
    auto op = transport::make_recv_reduce<Op>(rank_, peer, dst, rop, tag);
    post(op);
    return op;
  }

  void wait_state(RequestState& state) override {
    RequestState* const one[] = {&state};
    wait_any_state(one);
  }

  std::size_t wait_any_state(std::span<RequestState* const> states) override {
    RankSync& sync = world_.sync[static_cast<std::size_t>(rank_)];
    const double started = wall_clock().now();
    const auto deadline = std::chrono::steady_clock::now() + world_.options.timeout;
    auto any_finished = [&] {
      return std::any_of(states.begin(), states.end(),
                         [](RequestState* s) { return static_cast<Op*>(s)->finished(); });
    };
    if (!poll(any_finished, deadline)) {
      std::unique_lock lock(sync.mutex);
      sync.cv.wait_until(lock, deadline, [&] { return any_finished() || world_.aborted.load(); });
      if (!any_finished()) {
        lock.unlock();
        if (world_.aborted.load()) world_.throw_aborted(rank_);
        time_out(static_cast<Op&>(*states[0]), "");
      }
    }
    if (world_.aborted.load() && !any_finished()) world_.throw_aborted(rank_);
    const std::size_t pick = transport::first_delivered(states);
    auto& op = static_cast<Op&>(*states[pick]);
    if (!op.error.empty()) throw InvariantError(op.error);
    // Shaped: the message is not through the modelled NIC yet. That wait
    // is part of this one and ends by the same deadline.
    const double timeout_s = std::chrono::duration<double>(world_.options.timeout).count();
    if (op.not_before > 0 && !sleep_until_by(op.not_before, started + timeout_s)) {
      time_out(op, shaped_delay_note(op.not_before, started));
    }
    return pick;
  }

 private:
  [[noreturn]] void time_out(const Op& op, const std::string& note) {
    const std::string what = transport::timeout_text(rank_, world_.options.timeout, op, note);
    owner_.abort(rank_, what);
    world_.drain_transfers();
    throw TimeoutError(what);
  }

  // Polls until `done()` for up to TransportOptions::spin, yielding the core between
  // polls, and says whether the wait is over (done or aborted). A message
  // that lands within the spin costs no sleep and no wake-up, which on a
  // VM go through the hypervisor (the README's "Waits" measures both).
  // Yielding lets any rank that shares the core run first, so a poll never
  // keeps a rank with work to do off its core.
  template <typename Done>
  bool poll(const Done& done, std::chrono::steady_clock::time_point deadline) const {
    const auto until = std::min(deadline, std::chrono::steady_clock::now() + world_.options.spin);
    while (true) {
      if (done() || world_.aborted.load()) return true;
      if (std::chrono::steady_clock::now() >= until) return false;
      sched_yield();
    }
  }

  // Matches a send against the receives posted at its receiver, or a
  // receive against the sends addressed to its owner; queues it if nothing
  // matches.
  void post(const OpPtr& op) {
    const bool is_send = op->kind == OpKind::send;
    const int receiver = is_send ? op->peer : rank_;
    const int sender = is_send ? rank_ : op->peer;
    Mailbox& box = world_.mailboxes[static_cast<std::size_t>(receiver)];
    std::optional<OpPtr> match;
    {
      std::lock_guard lock(box.mutex);
      if (world_.aborted.load()) world_.throw_aborted(rank_);
      match = is_send ? box.queues.post_arrival(sender, op->tag, op)
                      : box.queues.post_receive(sender, op->tag, op);
      if (!match) return;
      world_.in_flight.fetch_add(1);
    }
    if (is_send) {
      world_.transfer(*op, **match);
    } else {
      world_.transfer(**match, *op);
    }
    world_.in_flight.fetch_sub(1);
  }

  InprocWorld::Impl& world_;
  InprocWorld& owner_;
  int rank_;
};

}  // namespace

InprocWorld::Impl::Impl(int n, TransportOptions opts)
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
    op.finish(std::move(error));
  }
  s.cv.notify_all();
}

void InprocWorld::Impl::transfer(Op& send, Op& recv) {
  const std::string error = transport::deliver(recv, send.owner, send.src, send.bytes);
  recv.not_before = send.arrival;
  complete(send, error);
  complete(recv, error);
}

void InprocWorld::Impl::drain_transfers() const {
  while (in_flight.load() > 0) std::this_thread::yield();
}

void InprocWorld::Impl::throw_aborted(int me) {
  drain_transfers();
  const int who = failure.rank();
  throw PeerLostError(who,
                      detail::concat("rank ", me, ": peer rank ", who, " failed: ", failure.why()));
}

InprocWorld::InprocWorld(int size, TransportOptions options) {
  GRADEX_ENFORCE(size >= 1, "an in-process world needs at least one rank, got ", size);
  impl_ = std::make_unique<Impl>(size, std::move(options));
  for (int r = 0; r < size; ++r) {
    impl_->comms.push_back(std::make_unique<InprocComm>(*impl_, *this, r));
  }
}

InprocWorld::~InprocWorld() = default;

int InprocWorld::size() const { return impl_->size; }

void InprocWorld::run(const std::function<void(Comm&)>& body) { run_ranks(*this, body); }

Comm& InprocWorld::comm(int rank) {
  GRADEX_ENFORCE(rank >= 0 && rank < impl_->size, "rank ", rank, " out of range");
  return *impl_->comms[static_cast<std::size_t>(rank)];
}

int InprocWorld::failed_rank() const {
  return impl_->failure.failed() ? impl_->failure.rank() : -1;
}

void InprocWorld::abort(int failed_rank, const std::string& why) noexcept {
  try {
    if (!impl_->failure.record(failed_rank, why)) return;
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
