#include "transport/sim/world.h"

#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "common/errors.h"
#include "transport/matching.h"
#include "transport/sim/fiber.h"
#include "transport/sim/network.h"

namespace gradex::sim {

namespace {

using transport::OpKind;

// A posted send, receive, receive-reduce, or a sleep (timer).
struct SimOp final : transport::Op {
  bool timer = false;
};
using OpPtr = std::shared_ptr<SimOp>;

// One message in flight: its send, and its receive once matched.
struct Message {
  int src = 0;
  int dst = 0;
  std::size_t bytes = 0;
  OpPtr send;
  OpPtr recv;            // set at the match, released once completed
  bool matched = false;
  bool left = false;     // the bytes have left the sender's egress
  bool arrived = false;  // ... and crossed the link latency
};
using MessagePtr = std::shared_ptr<Message>;

struct Event {
  enum Kind { flow_done, arrival, wake } kind = wake;
  double time = 0;
  std::uint64_t seq = 0;  // ties broken by posting order: deterministic
  int flow = -1;
  std::uint64_t version = 0;
  MessagePtr message;
  OpPtr timer;
};
struct Later {
  bool operator()(const Event& a, const Event& b) const {
    return a.time != b.time ? a.time > b.time : a.seq > b.seq;
  }
};

struct RankState {
  // Receives posted by this rank, and messages addressed to it that no
  // receive took yet.
  transport::Matcher<OpPtr, MessagePtr> queues;
  const SimOp* waiting_on = nullptr;  // set while blocked
  bool blocked = false;
};

class SimComm;

}  // namespace

struct SimWorld::Impl {
  int size;
  Topology topology;
  bool phantom = true;
  Network network;
  std::vector<std::unique_ptr<SimComm>> comms;
  std::vector<RankState> ranks;
  std::vector<std::unique_ptr<Fiber>> fibers;  // of the current run()
  std::deque<int> runnable;
  std::priority_queue<Event, std::vector<Event>, Later> events;
  std::vector<MessagePtr> message_of_flow;
  // Messages between one pair of endpoints leave one after another, as on
  // one connection (and as the in-process shaper's FIFO ports do): only
  // the oldest is a flow, the others wait here. Different pairs share a
  // port max-min fairly.
  std::map<std::pair<int, int>, std::deque<MessagePtr>> queued;
  double now = 0;
  std::uint64_t seq = 0;
  SimStats stats;
  bool aborted = false;
  int failed_rank = -1;
  std::string abort_reason;

  Impl(int n, Topology topo, bool phantom_payloads);
  void push(Event e) {
    e.seq = seq++;
    events.push(std::move(e));
  }
  void complete(SimOp& op, std::string error = {}) {
    op.finish(std::move(error));
    RankState& r = ranks[static_cast<std::size_t>(op.owner)];
    if (r.blocked) {
      r.blocked = false;
      runnable.push_back(op.owner);
    }
  }
  void post_send(const OpPtr& op);
  void post_recv(const OpPtr& op);
  void match(const MessagePtr& m, const OpPtr& recv);
  void on_left(const MessagePtr& m);
  void start_flow(const MessagePtr& m);
  void on_arrival(const MessagePtr& m);
  void process(const Event& e);
  void block(int rank, const SimOp& op);
  void abort(int rank, std::string why);
  [[noreturn]] void throw_aborted(int rank) const {
    throw PeerLostError(failed_rank, detail::concat("rank ", rank, ": peer rank ", failed_rank,
                                                    " failed: ", abort_reason));
  }
  std::string describe_stuck() const;
};

namespace {

class SimClock final : public Clock {
 public:
  SimClock(SimWorld::Impl& world, int rank) : world_(world), rank_(rank) {}
  double now() const override { return world_.now; }
  bool is_virtual() const override { return true; }
  void sleep_until(double t) override {
    if (t <= world_.now) return;
    auto op = std::make_shared<SimOp>();
    op->timer = true;
    op->owner = rank_;
    Event e;
    e.kind = Event::wake;
    e.time = t;
    e.timer = op;
    world_.push(std::move(e));
    while (!op->finished()) world_.block(rank_, *op);
  }

 private:
  SimWorld::Impl& world_;
  int rank_;
};

class SimComm final : public Comm {
 public:
  SimComm(SimWorld::Impl& world, int rank) : world_(world), rank_(rank), clock_(world, rank) {}

  int rank() const override { return rank_; }
  int size() const override { return world_.size; }
  Clock& clock() override { return clock_; }
  // Not a wall-clock limit: a simulated wait ends or the run deadlocks, and
  // a deadlock is detected exactly (no event can ever wake anyone).
  std::chrono::milliseconds timeout() const override { return std::chrono::milliseconds(0); }
  bool phantom_payloads() const override { return world_.phantom; }
  const Topology* shaping() const override { return &world_.network.topology(); }

 protected:
  std::shared_ptr<RequestState> start_send(int peer, const void* data, std::size_t bytes,
                                           Tag tag) override {
    auto op = transport::make_send<SimOp>(rank_, peer, data, bytes, tag);
    world_.post_send(checked(op));
    return op;
  }
  std::shared_ptr<RequestState> start_recv(int peer, void* data, std::size_t bytes,
                                           Tag tag) override {
    auto op = transport::make_recv<SimOp>(rank_, peer, data, bytes, tag);
    world_.post_recv(checked(op));
    return op;
  }
  std::shared_ptr<RequestState> start_recv_reduce(int peer, Tensor dst, ReduceOp rop,
                                                  Tag tag) override {
    auto op = transport::make_recv_reduce<SimOp>(rank_, peer, dst, rop, tag);
    world_.post_recv(checked(op));
    return op;
  }
  void wait_state(RequestState& state) override {
    auto& op = static_cast<SimOp&>(state);
    while (!op.finished()) world_.block(rank_, op);
    if (!op.error.empty()) throw InvariantError(op.error);
  }
  std::size_t wait_any_state(std::span<RequestState* const> states) override {
    // Any completion of this rank's operations wakes it (Impl::complete),
    // so block until one of these has.
    while (true) {
      for (std::size_t i = 0; i < states.size(); ++i) {
        if (static_cast<SimOp*>(states[i])->finished()) return i;
      }
      world_.block(rank_, *static_cast<SimOp*>(states[0]));
    }
  }

 private:
  // Nothing is posted once the world failed.
  const OpPtr& checked(const OpPtr& op) const {
    if (world_.aborted) world_.throw_aborted(rank_);
    return op;
  }

  SimWorld::Impl& world_;
  int rank_;
  SimClock clock_;
};

}  // namespace

SimWorld::Impl::Impl(int n, Topology topo, bool phantom_payloads)
    : size(n),
      topology(std::move(topo)),
      phantom(phantom_payloads),
      network(topology, [this](double t, int flow, std::uint64_t version) {
        Event e;
        e.kind = Event::flow_done;
        e.time = t;
        e.flow = flow;
        e.version = version;
        push(std::move(e));
      }),
      ranks(static_cast<std::size_t>(n)) {}

void SimWorld::Impl::post_send(const OpPtr& op) {
  ++stats.messages;
  auto m = std::make_shared<Message>();
  m->src = op->owner;
  m->dst = op->peer;
  m->bytes = op->bytes;
  m->send = op;
  // The bytes start leaving now, whether or not the receive is posted: the
  // shaper of the in-process transport reserves port time at the send too.
  if (op->bytes > 0 && network.limited(m->src, m->dst)) {
    auto& line = queued[{m->src, m->dst}];
    line.push_back(m);
    if (line.size() == 1) start_flow(m);  // the connection is idle
  } else {
    m->left = true;
    Event e;
    e.kind = Event::arrival;
    e.time = now + network.latency(m->src, m->dst, m->bytes);
    e.message = m;
    push(std::move(e));
  }
  RankState& receiver = ranks[static_cast<std::size_t>(m->dst)];
  if (auto recv = receiver.queues.post_arrival(m->src, op->tag, m)) match(m, *recv);
}

void SimWorld::Impl::post_recv(const OpPtr& op) {
  RankState& me = ranks[static_cast<std::size_t>(op->owner)];
  if (auto m = me.queues.post_receive(op->peer, op->tag, op)) match(*m, op);
}

// The pair is decided: move real data now (the sender's buffer is still
// owned by the transport, since its send cannot complete before the match)
// and complete whichever side's time has already come.
void SimWorld::Impl::match(const MessagePtr& m, const OpPtr& recv) {
  SimOp& send = *m->send;
  if (std::string error = transport::deliver(*recv, send.owner, send.src, send.bytes);
      !error.empty()) {
    complete(send, error);
    complete(*recv, error);
    m->send = nullptr;
    return;
  }
  m->recv = recv;
  m->matched = true;
  if (m->left) {
    complete(send);
    m->send = nullptr;
  }
  if (m->arrived) {
    complete(*recv);
    m->recv = nullptr;
  }
}

void SimWorld::Impl::start_flow(const MessagePtr& m) {
  const int flow = network.start(m->src, m->dst, m->bytes, now);
  if (static_cast<std::size_t>(flow) >= message_of_flow.size()) {
    message_of_flow.resize(static_cast<std::size_t>(flow) + 1);
  }
  message_of_flow[static_cast<std::size_t>(flow)] = m;
}

void SimWorld::Impl::on_left(const MessagePtr& m) {
  // The next message on this connection starts now.
  auto line = queued.find({m->src, m->dst});
  line->second.pop_front();
  if (line->second.empty()) {
    queued.erase(line);
  } else {
    start_flow(line->second.front());
  }
  m->left = true;
  if (m->matched && m->send != nullptr) {
    complete(*m->send);
    m->send = nullptr;
  }
  Event e;
  e.kind = Event::arrival;
  e.time = now + network.latency(m->src, m->dst, m->bytes);
  e.message = m;
  push(std::move(e));
}

void SimWorld::Impl::on_arrival(const MessagePtr& m) {
  m->arrived = true;
  if (m->recv != nullptr) {
    complete(*m->recv);
    m->recv = nullptr;
  }
}

void SimWorld::Impl::process(const Event& e) {
  ++stats.events;
  switch (e.kind) {
    case Event::flow_done:
      if (network.finish(e.flow, e.version, now)) {
        MessagePtr m = std::move(message_of_flow[static_cast<std::size_t>(e.flow)]);
        on_left(m);
      }
      break;
    case Event::arrival:
      on_arrival(e.message);
      break;
    case Event::wake:
      complete(*e.timer);
      break;
  }
}

void SimWorld::Impl::block(int rank, const SimOp& op) {
  if (aborted) throw_aborted(rank);
  RankState& r = ranks[static_cast<std::size_t>(rank)];
  r.blocked = true;
  r.waiting_on = &op;
  ++stats.context_switches;
  fibers[static_cast<std::size_t>(rank)]->yield();
  r.waiting_on = nullptr;
  if (aborted && !op.done) throw_aborted(rank);
}

void SimWorld::Impl::abort(int rank, std::string why) {
  if (aborted) return;
  aborted = true;
  failed_rank = rank;
  abort_reason = std::move(why);
  // Every blocked rank wakes, finds the world aborted and unwinds.
  for (int r = 0; r < size; ++r) {
    RankState& s = ranks[static_cast<std::size_t>(r)];
    if (s.blocked) {
      s.blocked = false;
      runnable.push_back(r);
    }
  }
}

std::string SimWorld::Impl::describe_stuck() const {
  std::string out;
  int listed = 0;
  int stuck = 0;
  for (int r = 0; r < size; ++r) {
    const RankState& s = ranks[static_cast<std::size_t>(r)];
    if (!s.blocked || s.waiting_on == nullptr) continue;
    ++stuck;
    if (listed++ >= 16) continue;  // the first few say enough
    const SimOp& op = *s.waiting_on;
    out += detail::concat(out.empty() ? "" : "; ", "rank ", r, " is ",
                          op.timer ? "sleeping" : transport::waiting_for(op));
  }
  if (stuck > listed) out += detail::concat("; and ", stuck - listed, " more");
  return detail::concat("simulated deadlock at t=", now, " s: ", stuck,
                        " ranks blocked with no message in flight: ", out);
}

SimWorld::SimWorld(int size, const TransportOptions& options) {
  GRADEX_ENFORCE(size >= 1, "a simulated world needs at least one rank, got ", size);
  // Unshaped: every endpoint on one node of instantaneous links.
  Topology topology = options.shaping ? *options.shaping
                                      : Topology::grouped(size, size, 0, LinkSpec{}, LinkSpec{});
  GRADEX_ENFORCE_EQ(topology.endpoints(), size, "simulated topology size");
  impl_ = std::make_unique<Impl>(size, std::move(topology), options.phantom_payloads);
  for (int r = 0; r < size; ++r) impl_->comms.push_back(std::make_unique<SimComm>(*impl_, r));
}

SimWorld::~SimWorld() = default;

int SimWorld::size() const { return impl_->size; }

Comm& SimWorld::comm(int rank) {
  GRADEX_ENFORCE(rank >= 0 && rank < impl_->size, "rank ", rank, " out of range");
  return *impl_->comms[static_cast<std::size_t>(rank)];
}

double SimWorld::now() const { return impl_->now; }

const SimStats& SimWorld::stats() const { return impl_->stats; }

void SimWorld::run(const std::function<void(Comm&)>& body) {
  Impl& w = *impl_;
  GRADEX_ENFORCE(!w.aborted, "a failed simulated world cannot run again");
  const int n = w.size;
  w.fibers.clear();
  for (int r = 0; r < n; ++r) {
    Comm& c = comm(r);
    w.fibers.push_back(std::make_unique<Fiber>([&body, &c] { body(c); }, kFiberStackBytes));
    w.runnable.push_back(r);
  }
  int finished = 0;
  bool deadlocked = false;
  std::string deadlock;
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
  while (finished < n) {
    while (!w.runnable.empty()) {
      const int r = w.runnable.front();
      w.runnable.pop_front();
      Fiber& f = *w.fibers[static_cast<std::size_t>(r)];
      f.resume();
      if (!f.finished()) continue;
      ++finished;
      if (f.error()) {
        errors[static_cast<std::size_t>(r)] = f.error();
        std::string why = "unknown exception";
        try {
          std::rethrow_exception(f.error());
        } catch (const std::exception& e) {
          why = e.what();
        } catch (...) {
        }
        w.abort(r, why);
      }
    }
    if (finished == n) break;
    w.network.settle(w.now);
    if (w.events.empty()) {
      // Nobody can run and nothing will ever happen: a deadlock.
      GRADEX_ENFORCE(!deadlocked, "simulated ranks ignored the deadlock and kept waiting");
      deadlocked = true;
      deadlock = w.describe_stuck();
      w.abort(-1, deadlock);
      continue;
    }
    Event e = w.events.top();
    w.events.pop();
    w.now = e.time;
    w.process(e);
  }
  w.fibers.clear();
  if (deadlocked) throw TimeoutError(deadlock);
  if (w.failed_rank >= 0 && errors[static_cast<std::size_t>(w.failed_rank)]) {
    std::rethrow_exception(errors[static_cast<std::size_t>(w.failed_rank)]);
  }
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace gradex::sim
