#include "transport/sim/world.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <deque>
#include <exception>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/cancel.h"
#include "common/errors.h"
#include "transport/matching.h"
#include "transport/sim/block_pool.h"
#include "transport/sim/event_queue.h"
#include "transport/sim/fiber.h"
#include "transport/sim/network.h"

namespace gradex::sim {

namespace {

using transport::OpKind;

// A posted send, receive, receive-reduce, or a sleep (timer).
struct SimOp final : transport::Op {
  bool timer = false;
  const char* protocol = nullptr;  // a send's: its rank's collective protocol
  bool line_per_tag = false;       // a send's: Comm::connection_per_tag
  // The wait for any of several operations (RankState::wait_number) that
  // last included this one: its completion wakes its owner only if that
  // wait is the one its owner is blocked in.
  std::uint32_t awaited_in = 0;
};
using OpPtr = std::shared_ptr<SimOp>;

struct Message;

// The messages between one pair of endpoints that have not left yet, in
// posting order, linked through Message::next_in_line: only the oldest is
// a flow.
struct Line {
  Message* head = nullptr;
  Message* tail = nullptr;
};

// One message in flight: its send, and its receive once matched. Messages
// live in SimWorld::Impl's pool and are recycled once nothing refers to
// them: they are out of the matcher (matched, or failed at the match) and
// out of the network (arrived).
struct Message {
  int src = 0;
  int dst = 0;
  std::size_t bytes = 0;
  const char* protocol = nullptr;  // the sender's collective protocol
  OpPtr send;
  OpPtr recv;            // set at the match, released once completed
  bool matched = false;
  bool failed = false;   // the match was invalid; both sides completed
  bool left = false;     // the bytes have left the sender's egress
  bool arrived = false;  // ... and crossed the link latency
  Line* line = nullptr;  // its connection, while it waits to leave
  Message* next_in_line = nullptr;
};

// A small trivially copyable event: the queue moves these around a lot.
struct Event {
  enum Kind : std::uint8_t { flow_done, arrival, wake };
  double time = 0;
  std::uint64_t seq = 0;  // ties broken by posting order: deterministic
  std::uint64_t version = 0;  // flow_done: the flow's version when scheduled
  Message* message = nullptr;  // arrival
  int index = -1;              // flow_done: the flow; wake: the timer's slot
  Kind kind = wake;
};

// Aligned: the fields read at every turn (down to the matcher's
// remembered queues) then span three cache lines, not four or five.
struct alignas(64) RankState {
  // What the scheduler reads of every rank it wakes first, together.
  bool blocked = false;
  // Counts this rank's waits for any of several operations; each marks its
  // operations with its number (SimOp::awaited_in), so that a completion
  // tells whether it ends the wait without reading the others (a PS round
  // waits for dozens at once, each on a line of its own).
  std::uint32_t wait_number = 0;
  const SimOp* waiting_on = nullptr;  // set while blocked
  // Set while blocked in a wait for any of several operations (waiting_on
  // is then the first of them).
  std::span<RequestState* const> waiting_any;
  // The operations of the wait for any it is blocked in (or just woke
  // from) that completed since it blocked, and the first of them: where
  // that is one, it is the one the wait returns, found without reading the
  // others. (Placed where the fields beside them leave room: the state
  // stays four cache lines.)
  const SimOp* first_awaited_done = nullptr;
  std::uint32_t awaited_done = 0;
  // The connection this rank last sent on (lines never move): a rank
  // mostly sends to the peer it sent to last, and finding it again in the
  // table of every connection costs a miss per message in a large world.
  int last_line_to = -1;
  Line* last_line = nullptr;
  // Its sends that completed and that it has not waited for yet, oldest
  // first: a rank that keeps a window of sends open waits for the oldest
  // before it posts the next, steps after it completed, and by then every
  // other rank's turn has pushed its lines out of the caches. The scheduler
  // prefetches the oldest before the rank's turn. A few are kept (the
  // oldest drop out past that; a send never waited for only ends a
  // prefetch's use).
  std::array<const SimOp*, 4> done_sends{};
  std::uint8_t done_first = 0;
  std::uint8_t done_count = 0;
  void send_done(const SimOp* op) {
    if (done_count == done_sends.size()) {
      done_first = static_cast<std::uint8_t>((done_first + 1) % done_sends.size());
      --done_count;
    }
    done_sends[(done_first + done_count++) % done_sends.size()] = op;
  }
  const SimOp* oldest_done_send() const { return done_count ? done_sends[done_first] : nullptr; }
  // `op` was waited for: out of the list, wherever it is (a PS worker
  // waits for its pushes at the end of a round, a ring for its sends as
  // they go).
  void waited(const SimOp* op) {
    const std::size_t n = done_sends.size();
    for (std::size_t i = 0; i < done_count; ++i) {
      if (done_sends[(done_first + i) % n] != op) continue;
      for (std::size_t j = i; j + 1 < done_count; ++j) {
        done_sends[(done_first + j) % n] = done_sends[(done_first + j + 1) % n];
      }
      --done_count;
      return;
    }
  }
  // Where the scheme keeps the send and the receive it last waited for
  // (Comm::request_in_wait): one that keeps its requests in a queue (a
  // ring's window) takes the next from beside it, and the one after that
  // goes in a few places on, lines that are cold by the rank's next turn.
  const void* send_slot = nullptr;
  const void* receive_slot = nullptr;
  // Receives posted by this rank, and messages addressed to it that no
  // receive took yet. A rank talks to a few peers on a few tags again and
  // again, so emptied queues are kept for the next message.
  transport::Matcher<OpPtr, Message*, /*KeepEmptyQueues=*/true> queues;
};

class SimComm;

// A connection's key, src * size + dst, mixed (splitmix64's finaliser)
// before it picks a bucket. The standard hash of an integer is the integer,
// and a ring's keys, r (n + 1) + 1, all fell into one bucket whenever the
// table had n + 1 buckets (a prime such as 257): every send then walked
// every connection, 28% of a 256-rank ring's instructions.
struct MixedKey {
  std::size_t operator()(std::uint64_t key) const {
    key ^= key >> 30;
    key *= 0xbf58476d1ce4e5b9ULL;
    key ^= key >> 27;
    key *= 0x94d049bb133111ebULL;
    key ^= key >> 31;
    return static_cast<std::size_t>(key);
  }
};

// The connection of one tag between a pair (Comm::connection_per_tag).
struct TaggedLineKey {
  std::uint64_t pair = 0;  // src * size + dst
  Tag tag = 0;
  bool operator==(const TaggedLineKey&) const = default;
};
struct TaggedLineHash {
  std::size_t operator()(const TaggedLineKey& k) const {
    return MixedKey{}(k.pair ^ MixedKey{}(k.tag));
  }
};

}  // namespace

struct SimWorld::Impl {
  // First, so that it goes last: the sends and receives messages still
  // hold go back to it as the messages go. (Timers are not from it.)
  BlockPool op_pool;
  int size;
  Topology topology;
  bool phantom = true;
  Network network;
  std::vector<std::unique_ptr<SimComm>> comms;
  std::vector<RankState> ranks;
  std::vector<std::unique_ptr<Fiber>> fibers;  // of the current run()
  std::deque<int> runnable;
  EventQueue<Event> events;  // earliest first, ties in posting order
  // Completion events in the queue. A flow whose rate changes gets a new
  // one and its old one goes stale (skipped when popped): where many flows
  // share a port (a server taking every worker's push) each change
  // reschedules them all, and stale events would pile up as flows squared.
  // Past kStaleSlack more than twice the flows in flight, they are dropped.
  std::size_t flow_events = 0;
  static constexpr std::size_t kStaleSlack = 4096;
  std::vector<Message*> message_of_flow;
  // Messages between one pair of endpoints leave one after another, as on
  // one connection (and as the in-process shaper's FIFO ports do): only
  // the oldest is a flow, the others wait in its line. Different pairs
  // share a port max-min fairly. Lines are kept once made (a pair that
  // talked once usually talks again), keyed by src * size + dst; the map's
  // elements do not move, so messages point at theirs.
  std::unordered_map<std::uint64_t, Line, MixedKey> lines;
  // A collective's connections when it keeps one per tag (a GPU library's
  // channels): its messages to a peer on different tags leave side by side.
  std::unordered_map<TaggedLineKey, Line, TaggedLineHash> tagged_lines;
  // Where every rank talks to every other (a server on each worker), kept
  // lines would grow as ranks squared: once a map holds this many, its
  // idle lines (no message waiting: nothing points at them) are dropped,
  // and the limit set to twice what is left, at least kLinesPerRank a rank.
  static constexpr std::size_t kLinesPerRank = 8;
  std::size_t lines_limit = 0;
  std::size_t tagged_lines_limit = 0;
  // Drops `map`'s idle lines if it has reached `limit`, and sets the next.
  template <class Map>
  bool drop_idle_lines(Map& map, std::size_t& limit);
  // Every message ever made (a deque: they never move), and those free
  // for reuse: a message costs no allocation once the pool is warm.
  std::deque<Message> message_pool;
  std::vector<Message*> free_messages;
  // Sleeping ranks' timer operations, by slot (events hold the slot: the
  // sleeping rank may unwind and drop its own reference).
  std::vector<OpPtr> timers;
  std::vector<int> free_timers;
  double now = 0;
  std::uint64_t seq = 0;
  SimStats stats;
  bool aborted = false;
  int failed_rank = -1;
  std::string abort_reason;

  Impl(int n, Topology topo, bool phantom_payloads);
  void push(Event e) {
    e.seq = seq++;
    events.push(e);
  }
  // Removes the completion events of flows rescheduled since; the rest
  // keep their order, so the simulation is the same to the last bit.
  void drop_stale_flow_events() {
    flow_events -= events.remove_if([this](const Event& e) {
      return e.kind == Event::flow_done && !network.current(e.index, e.version);
    });
  }
  Message* new_message() {
    if (free_messages.empty()) return &message_pool.emplace_back();
    Message* m = free_messages.back();
    free_messages.pop_back();
    return m;
  }
  // Called when `m` may be done with: recycled once out of the matcher
  // and the network.
  void release_if_done(Message* m) {
    if (!m->arrived || !(m->matched || m->failed)) return;
    *m = Message{};
    free_messages.push_back(m);
  }
  int add_timer(OpPtr op) {
    if (free_timers.empty()) {
      timers.push_back(std::move(op));
      return static_cast<int>(timers.size()) - 1;
    }
    const int slot = free_timers.back();
    free_timers.pop_back();
    timers[static_cast<std::size_t>(slot)] = std::move(op);
    return slot;
  }
  // Finishes `op` (with `error`, if the match failed) and wakes its rank
  // if it is blocked.
  void complete(SimOp& op) {
    op.finish();
    wake(op);
  }
  void complete_send(SimOp& send) {
    complete(send);
    ranks[static_cast<std::size_t>(send.owner)].send_done(&send);
  }
  // Prefetches every line of `op` and its shared count: a rank reads it
  // when it waits and destroys it after.
  static void prefetch_op(const SimOp* op) {
    prefetch_lines(reinterpret_cast<const char*>(op) - 16, sizeof(SimOp) + 16);  // the count before it
  }
  // Prefetches every cache line of [first, first + bytes).
  static void prefetch_lines(const void* first, std::size_t bytes) {
    const auto begin = reinterpret_cast<std::uintptr_t>(first) & ~std::uintptr_t{63};
    const auto end = reinterpret_cast<std::uintptr_t>(first) + bytes;
    for (std::uintptr_t line = begin; line < end; line += 64) {
      __builtin_prefetch(reinterpret_cast<const void*>(line));
    }
  }
  void complete(SimOp& op, std::string error) {
    op.finish(std::move(error));
    wake(op);
  }
  // `op` has finished: its rank runs again if it is blocked waiting for
  // it. A rank blocked in a wait for another operation (a ring's next
  // receive, while one of its sends completes) stays blocked, decided here
  // from `op` alone, without switching to its stack and back.
  void wake(const SimOp& op) {
    RankState& r = ranks[static_cast<std::size_t>(op.owner)];
    const bool awaited = r.waiting_any.empty() ? &op == r.waiting_on
                                               : op.awaited_in == r.wait_number;
    if (awaited && !r.waiting_any.empty() && r.awaited_done++ == 0) r.first_awaited_done = &op;
    if (!r.blocked) return;
    if (!awaited) {
      ++stats.context_switches;  // a wake-up that would find its wait unmet
      return;
    }
    r.blocked = false;
    runnable.push_back(op.owner);
  }
  // Asks the cache for what the events due a few places ahead will read:
  // in a large world each rank's state, stack included, is out of cache
  // by its next turn, and the events of one instant (every rank's, in a
  // ring) say whose turn is coming. Each level needs the line the one
  // before fetched: the message, then its rank's state and operation,
  // then the rank's stack.
  void prefetch_ahead() const;
  void post_send(const OpPtr& op);
  void post_recv(const OpPtr& op);
  void match(Message* m, OpPtr recv);
  void on_left(Message* m);
  void start_flow(Message* m);
  void on_arrival(Message* m);
  void process(const Event& e);
  // Suspends `rank` until one of its operations completes; `any` lists
  // the operations of a wait for any of several (`op` is the first).
  void block(int rank, const SimOp& op, std::span<RequestState* const> any = {});
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
    e.index = world_.add_timer(op);
    world_.push(e);
    while (!op->finished()) world_.block(rank_, *op);
  }

 private:
  SimWorld::Impl& world_;
  int rank_;
};

class SimComm final : public Comm {
 public:
  SimComm(SimWorld::Impl& world, int rank)
      : world_(world), rank_(rank), clock_(world, rank), alloc_(&world.op_pool) {}

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
    auto op = transport::make_send<SimOp>(rank_, peer, data, bytes, tag, alloc_);
    op->protocol = collective_protocol();
    op->line_per_tag = connection_per_tag();
    world_.post_send(checked(op));
    return op;
  }
  std::shared_ptr<RequestState> start_recv(int peer, void* data, std::size_t bytes,
                                           Tag tag) override {
    auto op = transport::make_recv<SimOp>(rank_, peer, data, bytes, tag, alloc_);
    world_.post_recv(checked(op));
    return op;
  }
  std::shared_ptr<RequestState> start_recv_reduce(int peer, Tensor dst, ReduceOp rop,
                                                  Tag tag) override {
    auto op = transport::make_recv_reduce<SimOp>(rank_, peer, dst, rop, tag, alloc_);
    world_.post_recv(checked(op));
    return op;
  }
  void wait_state(RequestState& state) override {
    auto& op = static_cast<SimOp&>(state);
    if (const Request* slot = request_in_wait()) {
      RankState& me = world_.ranks[static_cast<std::size_t>(rank_)];
      (op.kind == OpKind::send ? me.send_slot : me.receive_slot) = slot;
    }
    while (!op.finished()) world_.block(rank_, op);
    world_.ranks[static_cast<std::size_t>(rank_)].waited(&op);
    if (!op.error.empty()) throw InvariantError(op.error);
  }
  std::size_t wait_any_state(std::span<RequestState* const> states) override {
    // Any completion of this rank's operations wakes it (Impl::complete),
    // so block until one of these has.
    while (true) {
      for (std::size_t i = 0; i < states.size(); ++i) {
        if (static_cast<SimOp*>(states[i])->finished()) {
          world_.ranks[static_cast<std::size_t>(rank_)].waited(static_cast<SimOp*>(states[i]));
          return i;
        }
      }
      world_.block(rank_, *static_cast<SimOp*>(states[0]), states);
      // None had ended when it blocked: if one has since, it is the one.
      const RankState& me = world_.ranks[static_cast<std::size_t>(rank_)];
      if (me.awaited_done != 1) continue;
      const auto at = std::find(states.begin(), states.end(), me.first_awaited_done);
      if (at == states.end()) continue;
      world_.ranks[static_cast<std::size_t>(rank_)].waited(me.first_awaited_done);
      return static_cast<std::size_t>(at - states.begin());
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
  PoolAllocator<SimOp> alloc_;
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
        e.index = flow;
        e.version = version;
        push(e);
        if (++flow_events > 2 * static_cast<std::size_t>(network.active_flows()) + kStaleSlack) {
          drop_stale_flow_events();
        }
      }),
      ranks(static_cast<std::size_t>(n)) {}

void SimWorld::Impl::prefetch_ahead() const {
  // Each stage reads only what the stage before it (further ahead) asked
  // for, and asks for the next level down: a chain of reads that each
  // miss would cost a miss apiece when the event comes, and a miss here
  // if the stages were fewer.
  constexpr std::size_t kMessageAhead = 8;
  constexpr std::size_t kRankAhead = 6;
  constexpr std::size_t kPeerAhead = 5;
  constexpr std::size_t kQueueAhead = 4;
  constexpr std::size_t kSlotAhead = 3;
  constexpr std::size_t kOpAhead = 2;
  constexpr std::size_t kStackAhead = 1;
  // The message an event is about (a finished flow's is the one leaving),
  // and the rank it wakes: an arrival's receiver, a flow's sender.
  const auto message_of = [this](const Event& e) -> const Message* {
    if (e.kind == Event::arrival) return e.message;
    if (e.kind == Event::flow_done && static_cast<std::size_t>(e.index) < message_of_flow.size()) {
      return message_of_flow[static_cast<std::size_t>(e.index)];
    }
    return nullptr;
  };
  const auto rank_of = [](const Event& e, const Message& m) {
    return static_cast<std::size_t>(e.kind == Event::arrival ? m.dst : m.src);
  };
  // The receive queue of the peer an arrival's rank sends to next (it
  // sends on the connection it sent on last, and the message is handed to
  // the peer's oldest receive), or nullptr.
  const auto peer_queue = [this](const RankState& r) {
    return r.last_line_to < 0
               ? nullptr
               : ranks[static_cast<std::size_t>(r.last_line_to)].queues.last_receive_queue();
  };
  if (const Event* e = events.due_ahead(kMessageAhead)) {
    if (const Message* m = message_of(*e)) __builtin_prefetch(m);
  }
  if (const Event* e = events.due_ahead(kRankAhead)) {
    if (const Message* m = message_of(*e)) {
      const std::size_t r = rank_of(*e, *m);
      prefetch_lines(&ranks[r], sizeof(RankState));
      __builtin_prefetch(comms[r].get());
      if (r < fibers.size()) __builtin_prefetch(fibers[r].get());
      // The operation it completes, every line of it: the rank reads it
      // when it wakes and then destroys it (the string of its error text
      // sits on its last line).
      if (const SimOp* op = e->kind == Event::arrival ? m->recv.get() : m->send.get()) {
        prefetch_op(op);
      }
      if (e->kind == Event::flow_done) network.prefetch_flow(e->index, /*ports=*/false);
    }
  }
  if (const Event* e = events.due_ahead(kPeerAhead); e != nullptr) {
    if (e->kind == Event::arrival) {
      // A woken receiver next waits for the oldest receive it posted after
      // this one (a ring posts them steps ahead), sends on its last
      // connection to its peer, and posts a receive, which looks for an
      // early message first.
      const RankState& r = ranks[static_cast<std::size_t>(e->message->dst)];
      if (const auto* queue = r.queues.last_receive_queue()) __builtin_prefetch(queue);
      if (const auto* queue = r.queues.last_arrival_queue()) __builtin_prefetch(queue);
      if (r.last_line != nullptr) __builtin_prefetch(r.last_line);
      if (const SimOp* send = r.oldest_done_send()) prefetch_op(send);
      // The requests it waited for, the next ones beside them, and where
      // the ones it posts next go (a window of a few further on).
      constexpr std::size_t kSlotBytes = 80;
      if (r.receive_slot != nullptr) prefetch_lines(r.receive_slot, kSlotBytes);
      if (r.send_slot != nullptr) prefetch_lines(r.send_slot, kSlotBytes);
      if (r.last_line_to >= 0) {
        prefetch_lines(&ranks[static_cast<std::size_t>(r.last_line_to)], sizeof(RankState));
        network.prefetch_route(e->message->dst, r.last_line_to);
      }
    } else if (const Message* m = message_of(*e)) {
      // A finished flow: its ports and its connection.
      network.prefetch_flow(e->index, /*ports=*/true);
      if (m->line != nullptr) __builtin_prefetch(m->line);
    }
  }
  const auto arrival_ahead = [this](std::size_t ahead) -> const RankState* {
    const Event* e = events.due_ahead(ahead);
    if (e == nullptr || e->kind != Event::arrival) return nullptr;
    return &ranks[static_cast<std::size_t>(e->message->dst)];
  };
  if (const RankState* r = arrival_ahead(kQueueAhead)) {
    if (const auto* queue = peer_queue(*r)) __builtin_prefetch(queue);
    if (const auto* queue = r->queues.last_receive_queue()) {
      if (const OpPtr* next = queue->front_if_any()) prefetch_op(next->get());
    }
  }
  if (const RankState* r = arrival_ahead(kSlotAhead)) {
    if (const auto* queue = peer_queue(*r)) {
      if (const OpPtr* next = queue->second_if_any()) __builtin_prefetch(next);
    }
  }
  if (const RankState* r = arrival_ahead(kOpAhead)) {
    if (const auto* queue = peer_queue(*r)) {
      if (const OpPtr* next = queue->second_if_any()) prefetch_op(next->get());
    }
  }
  if (const Event* e = events.due_ahead(kStackAhead); e != nullptr && e->kind == Event::arrival) {
    const auto r = static_cast<std::size_t>(e->message->dst);
    if (r < fibers.size()) fibers[r]->prefetch_stack();
  }
}

void SimWorld::Impl::post_send(const OpPtr& op) {
  ++stats.messages;
  Message* m = new_message();
  m->src = op->owner;
  m->dst = op->peer;
  m->bytes = op->bytes;
  m->protocol = op->protocol;
  m->send = op;
  // The bytes start leaving now, whether or not the receive is posted: the
  // shaper of the in-process transport reserves port time at the send too.
  if (op->bytes > 0 && network.limited(m->src, m->dst)) {
    const auto key = static_cast<std::uint64_t>(m->src) * static_cast<std::uint64_t>(size) +
                     static_cast<std::uint64_t>(m->dst);
    RankState& sender = ranks[static_cast<std::size_t>(m->src)];
    if (!op->line_per_tag && sender.last_line_to != m->dst) {
      if (drop_idle_lines(lines, lines_limit)) {
        for (RankState& r : ranks) {  // they may remember a dropped line
          r.last_line = nullptr;
          r.last_line_to = -1;
        }
      }
      sender.last_line = &lines[key];
      sender.last_line_to = m->dst;
    }
    if (op->line_per_tag) drop_idle_lines(tagged_lines, tagged_lines_limit);
    Line& line = op->line_per_tag ? tagged_lines[TaggedLineKey{key, op->tag}] : *sender.last_line;
    m->line = &line;
    if (line.head == nullptr) {
      line.head = line.tail = m;
      start_flow(m);  // the connection is idle
    } else {
      line.tail->next_in_line = m;
      line.tail = m;
    }
  } else {
    m->left = true;
    Event e;
    e.kind = Event::arrival;
    e.time = now + network.latency(m->src, m->dst, m->bytes, m->protocol);
    e.message = m;
    push(e);
  }
  RankState& receiver = ranks[static_cast<std::size_t>(m->dst)];
  if (auto recv = receiver.queues.post_arrival(m->src, op->tag, m)) match(m, std::move(*recv));
}

template <class Map>
bool SimWorld::Impl::drop_idle_lines(Map& map, std::size_t& limit) {
  const std::size_t least = kLinesPerRank * static_cast<std::size_t>(size);
  if (map.size() < std::max(limit, least)) return false;
  std::erase_if(map, [](const auto& kv) { return kv.second.head == nullptr; });
  limit = 2 * map.size();
  return true;
}

void SimWorld::Impl::post_recv(const OpPtr& op) {
  RankState& me = ranks[static_cast<std::size_t>(op->owner)];
  if (auto m = me.queues.post_receive(op->peer, op->tag, op)) match(*m, op);
}

// The pair is decided: move real data now (the sender's buffer is still
// owned by the transport, since its send cannot complete before the match)
// and complete whichever side's time has already come.
void SimWorld::Impl::match(Message* m, OpPtr recv) {
  SimOp& send = *m->send;
  if (std::string error = transport::deliver(*recv, send.owner, send.src, send.bytes);
      !error.empty()) {
    complete(send, error);
    complete(*recv, error);
    m->send = nullptr;
    m->failed = true;
    release_if_done(m);
    return;
  }
  m->recv = std::move(recv);
  m->matched = true;
  if (m->left) {
    complete_send(send);
    m->send = nullptr;
  }
  if (m->arrived) {
    complete(*m->recv);
    m->recv = nullptr;
    release_if_done(m);
  }
}

void SimWorld::Impl::start_flow(Message* m) {
  const int flow = network.start(m->src, m->dst, m->bytes, now, m->protocol);
  if (static_cast<std::size_t>(flow) >= message_of_flow.size()) {
    message_of_flow.resize(static_cast<std::size_t>(flow) + 1);
  }
  message_of_flow[static_cast<std::size_t>(flow)] = m;
}

void SimWorld::Impl::on_left(Message* m) {
  // The next message on this connection has taken over the flow.
  Line& line = *m->line;
  line.head = m->next_in_line;
  if (line.head == nullptr) line.tail = nullptr;
  m->line = nullptr;
  m->next_in_line = nullptr;
  m->left = true;
  if (m->matched && m->send != nullptr) {
    complete_send(*m->send);
    m->send = nullptr;
  }
  Event e;
  e.kind = Event::arrival;
  e.time = now + network.latency(m->src, m->dst, m->bytes, m->protocol);
  e.message = m;
  push(e);
}

void SimWorld::Impl::on_arrival(Message* m) {
  m->arrived = true;
  if (m->recv != nullptr) {
    complete(*m->recv);
    m->recv = nullptr;
  }
  release_if_done(m);
}

void SimWorld::Impl::process(const Event& e) {
  ++stats.events;
  switch (e.kind) {
    case Event::flow_done:
      --flow_events;
      if (network.current(e.index, e.version)) {
        const auto flow = static_cast<std::size_t>(e.index);
        Message* m = message_of_flow[flow];
        // The next message on this connection leaves now, on the same
        // flow; else the flow ends.
        if (Message* next = m->next_in_line) {
          network.hand_over(e.index, next->bytes, now, next->protocol);
          message_of_flow[flow] = next;
        } else {
          network.finish(e.index);
          message_of_flow[flow] = nullptr;
        }
        on_left(m);
      }
      break;
    case Event::arrival:
      on_arrival(e.message);
      break;
    case Event::wake: {
      // Taken out of its slot first: completing it may let its rank sleep
      // again, which reuses the slot.
      OpPtr timer = std::move(timers[static_cast<std::size_t>(e.index)]);
      free_timers.push_back(e.index);
      complete(*timer);
      break;
    }
  }
}

void SimWorld::Impl::block(int rank, const SimOp& op, std::span<RequestState* const> any) {
  if (aborted) throw_aborted(rank);
  RankState& r = ranks[static_cast<std::size_t>(rank)];
  r.blocked = true;
  r.waiting_on = &op;
  r.waiting_any = any;
  if (!any.empty()) {
    ++r.wait_number;
    for (RequestState* state : any) static_cast<SimOp*>(state)->awaited_in = r.wait_number;
    r.awaited_done = 0;
  }
  ++stats.context_switches;
  fibers[static_cast<std::size_t>(rank)]->yield();
  r.waiting_on = nullptr;
  r.waiting_any = {};
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
  // A signal (SIGINT, SIGTERM) stops the world within a few thousand
  // events or turns: one simulated iteration of a large world runs for
  // minutes, longer than the runner's checks between iterations may wait.
  int cancelled = 0;
  constexpr std::uint32_t kStepsBetweenCancelChecks = 4096;
  std::uint32_t steps_since_check = 0;
  const auto cancel_if_signalled = [&] {
    if (++steps_since_check < kStepsBetweenCancelChecks) return false;
    steps_since_check = 0;
    const int sig = cancel_signal();
    if (sig == 0 || cancelled != 0) return false;
    cancelled = sig;
    w.abort(-1, detail::concat("cancelled by signal ", sig));
    return true;
  };
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
  while (finished < n) {
    while (!w.runnable.empty()) {
      cancel_if_signalled();
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
    // Rates are set once per instant, after all of its events: a refill
    // between two events of one instant moves no bytes.
    if (!w.events.due_now()) w.network.settle(w.now);
    if (w.events.empty()) {
      // Nobody can run and nothing will ever happen: a deadlock.
      GRADEX_ENFORCE(!deadlocked, "simulated ranks ignored the deadlock and kept waiting");
      deadlocked = true;
      deadlock = w.describe_stuck();
      w.abort(-1, deadlock);
      continue;
    }
    if (cancel_if_signalled()) continue;
    const Event e = w.events.pop();
    w.now = e.time;
    w.prefetch_ahead();
    w.process(e);
  }
  w.fibers.clear();
  w.stats.peak_operations = w.op_pool.peak();
  if (cancelled != 0) throw CancelledError(cancelled);
  if (deadlocked) throw TimeoutError(deadlock);
  if (w.failed_rank >= 0 && errors[static_cast<std::size_t>(w.failed_rank)]) {
    std::rethrow_exception(errors[static_cast<std::size_t>(w.failed_rank)]);
  }
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace gradex::sim
