#include "ps/push_pull_round.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "common/collective.h"
#include "common/errors.h"
#include "ps/protocol.h"

namespace gradex {
namespace {

// The four streams of a round (fill() says in which order they are
// refilled).
enum class Stream : std::uint8_t { pull, push, take, reply };
constexpr std::size_t kStreams = 4;

// A stream's window: `window.messages`, or as many as hold `window.bytes`
// (shard 0's messages: the shards differ by an element).
std::size_t round_window(const ServerLayout& layout, std::size_t chunk, const Tensor& data,
                         RoundWindow window) {
  GRADEX_ENFORCE(window.messages >= 2, "a push/pull round's window must hold two messages, got ",
                 window.messages);
  std::size_t count = layout.shard(data.count, 0).count;
  if (chunk > 0) count = std::min(count, chunk);
  const std::size_t bytes = count * dtype_size(data.dtype);
  if (bytes == 0) return window.messages;
  return std::max(window.messages, (window.bytes + bytes - 1) / bytes);
}

class Round {
 public:
  Round(Comm& comm, const ServerLayout& layout, const PsPattern& pattern, std::size_t chunk,
        Tensor data, ReduceOp op, ServerMemory& memory, RoundWindow window)
      : comm_(comm),
        layout_(layout),
        pattern_(pattern),
        chunk_(chunk),
        data_(data),
        combine_(combining_op(op)),
        me_(comm.rank()),
        first_server_(layout.server_at(me_, 0)) {
    const bool phantom = comm.phantom_payloads();
    const bool worker = me_ < layout.workers();
    for (int k = 0; k < layout.servers(); ++k) {
      const std::size_t chunks = chunk_count(layout.shard(data.count, k).count, chunk);
      if (worker) worker_chunks_ = std::max(worker_chunks_, chunks);
      if (layout.host(k) != me_ || chunks == 0) continue;  // an empty shard moves nothing
      const KeyRange shard = layout.shard(data.count, k);
      // The server's own memory: a co-located server must not touch its
      // worker's buffer, which is still being pushed from and pulled
      // into. A phantom-payload transport gets a phantom accumulator.
      const Tensor acc{phantom ? nullptr : memory.accumulator(k, shard.count * dtype_size(data.dtype)),
                       shard.count, data.dtype};
      hosted_.push_back({k, shard, chunks, acc, 0});
      host_chunks_ = std::max(host_chunks_, chunks);
    }
    replies_open_.assign(host_chunks_, 0);
    // A broadcast's root is its only pusher: each chunk's pushes to other
    // hosts go out first, and its own server answers the chunk only once
    // they are delivered, so the other servers answer while its replies
    // take its NIC (no push of another worker is waiting on them). Chunk
    // by chunk, not once for the whole round: with the takes gated
    // (may_take), a server that held back every chunk's answers would
    // fill a worker's window of pulls with them, and hold back the other
    // servers' answers, their takes, and the root's pushes it waits for.
    if (pattern.collective() == Collective::broadcast && me_ == kBroadcastRoot &&
        !hosted_.empty()) {
      self_last_ = true;
      pushes_elsewhere_.assign(worker_chunks_, 0);
      for (int k = 0; k < layout.servers(); ++k) {
        if (layout.host(k) == me_) continue;
        const std::size_t chunks = chunk_count(layout.shard(data.count, k).count, chunk);
        for (std::size_t j = 0; j < chunks; ++j) ++pushes_elsewhere_[j];
      }
    }
    settle(next_take_);
    settle(next_reply_);
    const std::size_t most = round_window(layout, chunk, data, window);
    // A broadcast's servers answer every worker at once: they get their
    // shards from the root one after another, and a worker's window of
    // pulls starts at the server it visits first, so a worker whose first
    // servers come late would hold back, through a window of replies, the
    // servers already served (a window put 2.0x its model's time on a
    // broadcast over 128 co-located servers).
    const bool answer_all =
        most == kUnboundedWindow.messages || pattern.collective() == Collective::broadcast;
    gated_ = answer_all;
    limit_[index(Stream::pull)] = most;
    limit_[index(Stream::push)] = most;
    if (window.pushes > 0) {
      limit_[index(Stream::push)] = std::min(most, window.pushes);
      limit_[index(Stream::pull)] = kChunksInFlight * limit_[index(Stream::push)];
      // Each push after its pull, where a chunk's pulls fit the window:
      // beyond, the pushes a server waits for to answer a chunk could wait
      // for pulls that wait for its answers.
      paced_ = limit_[index(Stream::pull)] >= static_cast<std::size_t>(layout.servers());
    }
    // Contributions combined into one accumulator come one at a time (two
    // receive-reduces into one range would overlap); placed parts land
    // side by side, several at once.
    limit_[index(Stream::take)] = pattern.combines() ? 1 : most;
    limit_[index(Stream::reply)] = answer_all ? kUnboundedWindow.messages : most;
  }

  void run() {
    for (;;) {
      fill();
      if (waiting_.empty()) break;
      wait_for_one();
    }
    GRADEX_ENFORCE(push_at_ == push_end() && pull_at_ == pull_end() && !valid(next_take_) &&
                       !valid(next_reply_),
                   "rank ", me_, ": a push/pull round stopped with messages left to post");
  }

 private:
  struct Hosted {
    int server;
    KeyRange shard;
    std::size_t chunks;
    Tensor acc;
    std::size_t started = 0;  // chunks [0, started) have a contribution posted
  };
  // A host's next (chunk, step, hosted server, worker) to take or answer:
  // chunk by chunk, step by step, at a step server k's workers w = k - s
  // (mod servers), ascending (those whose step s is k, ServerLayout::
  // server_at), the hosted servers of a step in ascending order.
  struct Cursor {
    std::size_t chunk = 0;
    int step = 0;
    std::size_t hosted = 0;
    int worker = -1;  // -1: not yet placed on (chunk, step, hosted)
  };
  struct Open {
    Stream stream;
    bool elsewhere;     // a push to another endpoint
    std::size_t chunk;  // its chunk (a take's and a reply's are read)
  };
  // An open operation not yet waited for, kept in its stream's list in
  // posting order.
  struct Queued {
    Request request;
    Open what;
  };
  // Waited for at once: the oldest kWaitedPerStream of each stream. Any of
  // them that ends frees its place in the window right away (a server's
  // reply to a GPU of its own node ends before the older one through the
  // node's NIC); one younger than those keeps its place until it is among
  // them. Waiting for the oldest alone would be enough to never deadlock
  // (the operation of the lowest step not yet matched is the oldest of its
  // stream), but holds a place per operation that ended out of order.
  static constexpr std::size_t kWaitedPerStream = kRoundWindow;

  static std::size_t index(Stream s) { return static_cast<std::size_t>(s); }

  // Posts what the windows have room for, stream by stream.
  void fill() {
    // Pulls first, so a reply finds its receive when the windows are wide
    // enough; a chunk's replies before the next chunk's takes, as they
    // become possible at one instant (the last contribution in).
    for (Stream s : {Stream::pull, Stream::push, Stream::reply, Stream::take}) {
      while (open_[index(s)] < limit_[index(s)] && post_next(s)) {
      }
    }
  }

  // Posts stream s's next operation; false when it has none left, or none
  // that may go yet.
  bool post_next(Stream s) {
    switch (s) {
      case Stream::pull: return post_worker_side(false);
      case Stream::push: return post_worker_side(true);
      case Stream::take: return post_take();
      case Stream::reply: return post_reply();
    }
    return false;
  }

  // A worker's operations, one per (chunk, step), chunk by chunk: chunk j
  // of every server's shard in the rotation, then chunk j + 1. A
  // broadcast root's pushes pass each chunk twice: to the other hosts,
  // then its own.
  std::size_t pull_end() const { return worker_chunks_ * static_cast<std::size_t>(layout_.servers()); }
  std::size_t push_end() const { return (self_last_ ? 2 : 1) * pull_end(); }

  bool post_worker_side(bool push) {
    std::size_t& at = push ? push_at_ : pull_at_;
    const std::size_t servers = static_cast<std::size_t>(layout_.servers());
    const std::size_t end = push ? push_end() : pull_end();
    while (at < end) {
      // Paced, a push goes after its pull: the pushes run no further ahead
      // than the pulls' window.
      if (push && paced_ && at >= pull_at_ && pull_at_ < pull_end()) return false;
      const std::size_t t = at++;
      const std::size_t passes = push && self_last_ ? 2 : 1;
      const std::size_t j = t / (passes * servers);
      const bool second_pass = t % (passes * servers) >= servers;
      const int k = static_cast<int>((static_cast<std::size_t>(first_server_) + t) % servers);
      const int host = layout_.host(k);
      if (self_last_ && push && (host == me_) != second_pass) continue;
      const KeyRange shard = layout_.shard(data_.count, k);
      if (j >= chunk_count(shard.count, chunk_)) continue;
      const KeyRange c = chunk_range(shard, chunk_, j);
      const KeyRange r = push ? pattern_.pushed(me_, c) : pattern_.pulled(me_, c);
      if (r.count == 0) continue;  // this worker moves none of it (pattern.h)
      const Tensor part = data_.slice(r.offset, r.count);
      if (push) {
        add(comm_.isend(host, part.data, part.bytes(), push_tag(k)), {Stream::push, host != me_, j});
      } else {
        add(comm_.irecv(host, part.data, part.bytes(), pull_tag(k)), {Stream::pull, false, j});
      }
      return true;
    }
    return false;
  }

  bool valid(const Cursor& c) const { return c.chunk < host_chunks_; }

  // Moves `c` to the first pair at or after it that exists.
  void settle(Cursor& c) const {
    const int servers = layout_.servers();
    while (valid(c)) {
      const Hosted& h = hosted_[c.hosted];
      if (c.worker < 0) c.worker = ((h.server - c.step) % servers + servers) % servers;
      if (c.worker < layout_.workers() && c.chunk < h.chunks) return;
      c.worker = -1;
      if (++c.hosted < hosted_.size()) continue;
      c.hosted = 0;
      if (++c.step < servers) continue;
      c.step = 0;
      ++c.chunk;
    }
  }
  void move_past(Cursor& c) const {
    c.worker += layout_.servers();
    settle(c);
  }

  // Range r of hosted server h's shard, as it sits in its accumulator.
  static Tensor held(const Hosted& h, KeyRange r) {
    return h.acc.slice(r.offset - h.shard.offset, r.count);
  }

  bool post_take() {
    while (may_take()) {  // checked again past every pair with nothing to take
      const Cursor c = next_take_;
      move_past(next_take_);
      Hosted& h = hosted_[c.hosted];
      const KeyRange p = pattern_.pushed(c.worker, chunk_range(h.shard, chunk_, c.chunk));
      if (p.count == 0) continue;
      const Tensor part = held(h, p);
      const Tag tag = push_tag(h.server);
      // A chunk's first contribution is copied in: no identity element
      // needed, which min and max lack.
      const bool first = c.chunk >= h.started;
      h.started = c.chunk + 1;
      const Open what{Stream::take, false, c.chunk};
      taking_chunk_ = c.chunk;
      add(pattern_.combines() && !first ? comm_.irecv_reduce(c.worker, part, combine_, tag)
                                        : comm_.irecv(c.worker, part.data, part.bytes(), tag),
          what);
      return true;
    }
    return false;
  }

  // Whether every contribution to chunk j is in.
  bool summed(std::size_t j) const {
    if (valid(next_take_) && next_take_.chunk <= j) return false;
    return open_[index(Stream::take)] == 0 || taking_chunk_ > j;
  }

  // Whether the next take may be posted: one chunk's takes at a time (the
  // next chunk's once this one's are all in), and, where the replies are
  // unbounded, once the answers of the chunk kChunksInFlight before it are
  // delivered (protocol.h): what bounds its open replies then.
  bool may_take() const {
    if (!valid(next_take_)) return false;
    const std::size_t j = next_take_.chunk;
    if (open_[index(Stream::take)] > 0 && taking_chunk_ != j) return false;
    if (self_last_ && pushes_elsewhere_[j] > 0) return false;
    if (!gated_ || j < kChunksInFlight) return true;
    const std::size_t answered = j - kChunksInFlight;  // its replies all delivered
    return !(valid(next_reply_) && next_reply_.chunk <= answered) && replies_open_[answered] == 0;
  }

  bool post_reply() {
    while (valid(next_reply_)) {
      if (!summed(next_reply_.chunk)) return false;
      const Cursor c = next_reply_;
      move_past(next_reply_);
      const Hosted& h = hosted_[c.hosted];
      const KeyRange p = pattern_.pulled(c.worker, chunk_range(h.shard, chunk_, c.chunk));
      if (p.count == 0) continue;
      const Tensor part = held(h, p);
      add(comm_.isend(c.worker, part.data, part.bytes(), pull_tag(h.server)),
          {Stream::reply, false, c.chunk});
      ++replies_open_[c.chunk];
      return true;
    }
    return false;
  }

  void add(Request r, Open what) {
    const std::size_t s = index(what.stream);
    ++open_[s];
    if (waited_[s] < kWaitedPerStream) {
      wait_for(std::move(r), what);
    } else {
      later_[s].push_back({std::move(r), what});
    }
  }

  // Adds `r` to the operations waited for.
  void wait_for(Request r, Open what) {
    waiting_.push_back(std::move(r));
    waiting_what_.push_back(what);
    ++waited_[index(what.stream)];
  }

  // Blocks until one of the operations waited for ends, frees its place in
  // its stream's window, and waits for the stream's next oldest instead.
  void wait_for_one() {
    const std::size_t i = comm_.wait_any(waiting_);
    const Open what = waiting_what_[i];
    const std::size_t s = index(what.stream);
    if (what.elsewhere && self_last_) --pushes_elsewhere_[what.chunk];
    if (what.stream == Stream::reply) --replies_open_[what.chunk];
    --open_[s];
    --waited_[s];
    waiting_[i] = std::move(waiting_.back());
    waiting_.pop_back();
    waiting_what_[i] = waiting_what_.back();
    waiting_what_.pop_back();
    if (!later_[s].empty()) {
      wait_for(std::move(later_[s].front().request), later_[s].front().what);
      later_[s].pop_front();
    }
  }

  Comm& comm_;
  const ServerLayout& layout_;
  const PsPattern& pattern_;
  std::size_t chunk_;
  Tensor data_;
  ReduceOp combine_;
  int me_;
  int first_server_;  // the server this worker visits first
  std::vector<Hosted> hosted_;
  std::size_t worker_chunks_ = 0;  // the most chunks of any shard
  std::size_t host_chunks_ = 0;    // the most chunks of a shard hosted here
  bool self_last_ = false;         // a broadcast root's pushes to itself go last
  std::vector<std::size_t> pushes_elsewhere_;  // a broadcast root's, per chunk, not yet delivered
  std::size_t taking_chunk_ = 0;     // the chunk of the takes open, if any
  bool paced_ = false;               // RoundWindow::pushes
  bool gated_ = false;               // replies unbounded, takes gated (may_take)
  std::vector<std::size_t> replies_open_;  // per chunk, the replies under way
  std::size_t push_at_ = 0;
  std::size_t pull_at_ = 0;
  Cursor next_take_;
  Cursor next_reply_;
  std::array<std::size_t, kStreams> open_{};    // each stream's open operations
  std::array<std::size_t, kStreams> waited_{};  // ... and those of them waited for
  std::vector<Request> waiting_;                // those waited for, in no order
  std::vector<Open> waiting_what_;
  std::array<std::deque<Queued>, kStreams> later_;  // the others, oldest first
  std::array<std::size_t, kStreams> limit_{};
};

}  // namespace

void push_pull_round(Comm& comm, const ServerLayout& layout, const PsPattern& pattern,
                     std::size_t chunk, Tensor data, ReduceOp op, ServerMemory& memory,
                     RoundWindow window) {
  Round(comm, layout, pattern, chunk, data, op, memory, window).run();
}

}  // namespace gradex
