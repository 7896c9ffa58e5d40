#include "allreduce/tree_blocks.h"

#include <algorithm>
#include <deque>
#include <map>
#include <vector>

#include "allreduce/request_window.h"
#include "allreduce/segments.h"
#include "allreduce/tree.h"
#include "common/cost_model.h"
#include "common/errors.h"
#include "common/scheme.h"

namespace gradex {

namespace {

// Tag of half t of block b: a half-block has a tag of its own, so the
// messages between two ranks match whatever order each posts them in (a
// rank sends the half-blocks with nothing to wait for first). Above
// tree.cpp's tags (0-4); schemes' tags stay below 2^22 (common/comm.h).
constexpr Tag kFirstBlockTag = 8;
constexpr Tag kSchemeTagLimit = Tag{1} << 22;
Tag block_tag(int b, int t) { return kFirstBlockTag + 2 * static_cast<Tag>(b) + static_cast<Tag>(t); }

// The in-order tree's subtree of `top` is the interval of ranks within
// its level's reach: top's lowest set bit b puts its descendants at
// top - b + 1 .. top + b - 1 (cut at n); the root 0 holds every rank.
bool inorder_below(int n, int top, int rank) {
  if (top == 0) return true;
  const int b = top & -top;
  return rank > top - b && rank < std::min(n, top + b);
}

// Elements in half t of block b.
std::size_t half_size(const BlockSplit& blocks, int b, int t) {
  return BlockSplit{blocks.size(static_cast<std::size_t>(b)), 2}.size(static_cast<std::size_t>(t));
}

// The longest path between two ranks of tree `which`, in hops: the most,
// over ranks, of its two longest paths down through different children.
int tree_diameter(int n, int which) {
  std::vector<int> depth(static_cast<std::size_t>(n), 0), order(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    for (int up = double_tree(n, r, which).parent; up >= 0; up = double_tree(n, up, which).parent) {
      ++depth[static_cast<std::size_t>(r)];
    }
    order[static_cast<std::size_t>(r)] = r;
  }
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return depth[static_cast<std::size_t>(a)] > depth[static_cast<std::size_t>(b)];
  });
  // Deepest first: every rank's children are done before it.
  std::vector<int> longest(static_cast<std::size_t>(n), 0), second(static_cast<std::size_t>(n), 0);
  int diameter = 0;
  for (int v : order) {
    const auto i = static_cast<std::size_t>(v);
    diameter = std::max(diameter, longest[i] + second[i]);
    const int p = double_tree(n, v, which).parent;
    if (p < 0) continue;
    const auto j = static_cast<std::size_t>(p);
    const int through = longest[i] + 1;
    if (through > longest[j]) {
      second[j] = longest[j];
      longest[j] = through;
    } else {
      second[j] = std::max(second[j], through);
    }
  }
  return diameter;
}

// Half t of block b of `data`.
struct HalfBlocks {
  Tensor data;
  BlockSplit blocks;
  Tensor of(int b, int t) const {
    const auto i = static_cast<std::size_t>(b);
    const Tensor block = data.slice(blocks.offset(i), blocks.size(i));
    const BlockSplit halves{block.count, 2};
    const auto h = static_cast<std::size_t>(t);
    return block.slice(halves.offset(h), halves.size(h));
  }
};

// A rank's neighbours in one role, -1 where absent (at most three).
using Peers = std::array<int, 3>;

// What a rank does with one unit (a segment of one half-block) in one of
// its roles:
//   unprompted: needs nothing; sends to `to` (a reduce-scatter's leaf
//               passing its own copy on; an all-gather's owner spreading
//               its own).
//   sink:       a reduce-scatter's owner combining its own: receives from
//               `from`, one after the other.
//   upward:     toward the root: received from children, sent to the
//               parent.
//   downward:   toward the leaves: sent to children (an all-gather's leaf
//               has none: what it receives from its parent ends there).
// A reduce-scatter's unit has one role at a rank. An all-gather's unit
// that comes from a child goes up to the parent and down to the other
// child: two roles, the downward one taking the data the upward one
// received (`after_upward`). An all-gather's downward units are also told
// apart by how far up the rank's branch meets the owner's (its level: 0
// from a child, k from the parent when the k-th ancestor is the first
// whose subtree holds the owner), one stream each (see TreeBlocks).
enum class Role { unprompted, sink, upward, downward };

struct Step {
  bool present = false;
  Peers from{-1, -1, -1};  // receive (reduce-scatter: combine) from each, in turn
  Peers to{-1, -1, -1};    // then send to each
  bool after_upward = false;  // all-gather: the data comes from the upward role
};

int count(const Peers& p) { return (p[0] >= 0) + (p[1] >= 0) + (p[2] >= 0); }

Peers only(int peer) { return {peer, -1, -1}; }

// Rank r's neighbours in tree t and its ancestors, nearest first: what
// each of r's steps looks up, found once (a rank takes a step for every
// unit of every stream it drives).
struct Place {
  int n = 0;
  int t = 0;
  int r = 0;
  TreeLinks links;
  std::vector<int> ancestors;
};

Place place_of(int n, int t, int r) {
  Place p{n, t, r, double_tree(n, r, t), {}};
  for (int up = p.links.parent; up >= 0; up = double_tree(n, up, t).parent) p.ancestors.push_back(up);
  return p;
}

TreeRoute route_via(const TreeLinks& links, int n, int which, int rank, int owner) {
  TreeRoute route;
  if (owner != rank) {
    route.toward = links.parent;
    for (int c : links.children) {
      if (c >= 0 && double_tree_below(n, which, c, owner)) route.toward = c;
    }
  }
  int k = 0;
  for (int neighbour : {links.parent, links.children[0], links.children[1]}) {
    if (neighbour >= 0 && neighbour != route.toward) route.away[static_cast<std::size_t>(k++)] = neighbour;
  }
  return route;
}

// How far up from r the owner's branch meets r's: 0 when the owner is
// below r, k when r's k-th ancestor is the first above it.
int meeting_level(const Place& p, int owner) {
  if (double_tree_below(p.n, p.t, p.r, owner)) return 0;
  int level = 1;
  for (int up : p.ancestors) {
    if (double_tree_below(p.n, p.t, up, owner)) return level;
    ++level;
  }
  GRADEX_ENFORCE(false, "rank ", owner, " is not in tree ", p.t, " over ", p.n, " ranks");
  return level;
}

// Rank r's step (at its place) for a half-block owned by `owner`, in
// `role` (an all-gather's downward role: at `level`).
Step step_of(Collective c, const Place& place, int owner, Role role, int level) {
  const int n = place.n;
  const TreeRoute route = route_via(place.links, n, place.t, place.r, owner);
  const int parent = place.links.parent;
  Step s;
  if (c == Collective::reduce_scatter) {
    // Sums flow toward the owner: in from every farther neighbour.
    Role mine = Role::unprompted;
    if (route.toward < 0) {
      mine = Role::sink;
    } else if (route.away_count() > 0) {
      mine = route.toward == parent ? Role::upward : Role::downward;
    }
    if (mine != role) return s;
    s.present = true;
    s.from = route.away;
    if (route.toward >= 0) s.to = only(route.toward);
    return s;
  }
  // All-gather: the half-block flows out from the owner.
  if (route.toward < 0) {
    if (role != Role::unprompted) return s;
    s.present = true;
    s.to = route.away;
    return s;
  }
  Peers children{-1, -1, -1};
  for (int k = 0, i = 0; k < 3; ++k) {
    if (route.away[k] >= 0 && route.away[k] != parent) children[i++] = route.away[k];
  }
  const bool from_parent = route.toward == parent;
  switch (role) {
    case Role::upward:
      s.present = !from_parent;
      s.from = only(route.toward);
      if (parent >= 0) s.to = only(parent);
      break;
    case Role::downward:
      // From the parent at the level the branches meet (a leaf too, with
      // no children to pass it to: what it takes from its parent arrives
      // in the order its parent's streams send it); from a child, on to
      // the other child if there is one.
      s.present = from_parent ? meeting_level(place, owner) == level : count(children) > 0 && level == 0;
      if (from_parent) {
        s.from = only(route.toward);
      } else {
        s.after_upward = true;
      }
      s.to = children;
      break;
    case Role::sink:  // an all-gather ends at leaves in their downward streams
    case Role::unprompted: break;
  }
  return s;
}

// One rank's part in the collective.
//
// Units in one order on every rank: (block, segment, tree), empty segments
// skipped. The unprompted ones leave in that order, a window of them open
// per lane (see Lane); a reduce-scatter's sinks are taken last. The rest
// form streams, each handled in that order: per tree one upward stream,
// and downward one stream (reduce-scatter) or one per level (all-gather:
// level k + 1 here is level k at the parent, and level 1 the parent's
// level 0, its own block aside, which it sends at once):
//   - an upward stream needs only the children's upward streams;
//   - a downward stream needs the parent's downward stream (and, in a
//     reduce-scatter, the other child's upward one; in an all-gather this
//     rank's own upward one).
// A child so takes what its parent sends it in each stream in the order
// the parent sent it. With a single downward stream an all-gather's
// half-blocks from the parent, which come from far, would hold back
// those from the other child, ready long before (23% against 36% above
// the model at 512 ranks, results/README.md, sim_collectives).
// There is no cycle: a unit keeps its place in the order all along its
// path, every rank takes each stream's units in that order, and a rank
// waits on a send only alongside its receives (sends are reaped as they
// complete), or, with no receive left, on its oldest unprompted send,
// which its receiver takes in order; nobody waits forever. Sends to a
// unit's owner are kept apart (a reduce-scatter's owner takes its own
// block last).
//
// A rank drives its streams at once, taking whichever stream's
// message lands first (Comm::wait_any): while it waits for its parent's
// sums it keeps passing its subtree's upward. Each stream posts its first
// receives kUnitsAhead units ahead. A reduce-scatter's second (and third)
// receive of a unit into the same memory is posted once the first has
// landed: never two reductions into one place at once. What a rank holds
// open so does not grow with the number of ranks (the unprompted sends
// of a reduce-scatter's leaf, one per other block, once were all posted
// at once, and an all-gather's leaf's receives too).
class TreeBlocks {
 public:
  static constexpr std::size_t kUnitsAhead = kSegmentsAhead;
  // A lane's bytes in flight: NCCL's buffer per connection (NCCL_BUFFSIZE,
  // 4 MiB by default, NCCL's environment variables documentation).
  static constexpr std::size_t kLaneBytes = std::size_t{4} << 20;

  TreeBlocks(Comm& comm, Collective c, Tensor data, ReduceOp op, std::size_t segment_bytes)
      : comm_(comm), c_(c), op_(op), n_(comm.size()), r_(comm.rank()),
        halves_{data, BlockSplit{data.count, static_cast<std::size_t>(n_)}},
        seg_((halves_.blocks.size(0) + 1) / 2, segment_bytes, data.dtype) {
    for (int t = 0; t < 2; ++t) {
      places_[t] = place_of(n_, t, r_);
      upward_[t] = streams_.size();
      streams_.push_back(stream(t, Role::upward, 0));
      // An all-gather's downward units come at levels 0 to this rank's
      // depth; a reduce-scatter's are one stream.
      const std::size_t depth = c == Collective::all_gather ? places_[t].ancestors.size() : 0;
      for (std::size_t level = 0; level <= depth; ++level) {
        streams_.push_back(stream(t, Role::downward, static_cast<int>(level)));
      }
    }
  }

  void run() {
    for (int t = 0; t < 2; ++t) {
      const TreeLinks& links = places_[t].links;
      for (int to : {links.parent, links.children[0], links.children[1]}) {
        if (to < 0) continue;
        for (bool upward : {true, false}) {
          Lane lane{t, to, upward, {}, {}};
          lane.next = next_in(lane, first(), /*inclusive=*/true);
          if (lane.next.b < n_) lanes_.push_back(std::move(lane));
        }
      }
    }
    for (Stream& st : streams_) {
      st.head = next_in(st, first(), /*inclusive=*/true);
      st.posted = st.head;
      while (st.firsts.size() < kUnitsAhead && st.posted.b < n_) post_first(st);
    }
    drive();
    if (c_ == Collective::reduce_scatter) {
      // This rank's own block: a reduce-scatter's only sinks.
      for (Unit u = first(r_); u.b == r_; u = next(u)) {
        const Step end = step(u, Role::sink);
        for (int from : end.from) {
          if (from < 0) continue;
          Request in = comm_.irecv_reduce(from, u.s, op_, tag_of(u));
          comm_.wait(in);
        }
      }
    }
    for (Request& s : sends_.open) comm_.wait(s);
    for (Lane& lane : lanes_) {
      for (Request& s : lane.sent.open) comm_.wait(s);
    }
    comm_.wait_all(to_owners_);
  }

 private:
  // Segment j of half-block t of block b.
  struct Unit {
    int b = 0;
    std::size_t j = 0;
    int t = 0;
    Tensor s;
    bool before(const Unit& o) const { return b != o.b ? b < o.b : j != o.j ? j < o.j : t < o.t; }
  };

  // Sends open, oldest first, and their bytes.
  struct Sends {
    std::deque<Request> open;
    std::deque<std::size_t> bytes;
    std::size_t open_bytes = 0;
    void push(Request r, std::size_t b) {
      open.push_back(std::move(r));
      bytes.push_back(b);
      open_bytes += b;
    }
    void pop() {
      open.pop_front();
      open_bytes -= bytes.front();
      bytes.pop_front();
    }
  };

  // The unprompted units of one tree this rank sends to one neighbour
  // that takes them in one of its streams (upward or not), in order. A
  // send completes once that stream has taken it, and a lane keeps at
  // least kUnitsAhead of them open, and up to kLaneBytes: what it has in
  // flight must cover the link's latency, or the stream it feeds stalls a
  // latency every window (small segments on a slow link: 4 KiB on 10 GB/s
  // with 5 us took 1.4x as long with 8 open). One window for all would
  // wait on a unit of a stream far behind while another stream starved.
  struct Lane {
    int t = 0;
    int to = -1;
    bool upward = false;
    Unit next;  // the next unit to send
    Sends sent;
  };

  // The units of one tree in one role (and level), in order.
  struct Stream {
    int t = 0;
    Role role = Role::upward;
    int level = 0;
    Unit head;    // the unit being handled
    Step now;     // its step
    Unit posted;  // the next unit whose first receive is to be posted
    std::deque<Request> firsts;  // first receives posted, head's at the front
    std::size_t k = 0;  // head's receives that have landed
    Request more;       // reduce-scatter: head's receive from now.from[k], k > 0
  };

  static Stream stream(int t, Role role, int level) {
    Stream st;
    st.t = t;
    st.role = role;
    st.level = level;
    return st;
  }

  Step step(const Unit& u, Role role, int level = 0) const {
    return step_of(c_, places_[u.t], u.b, role, level);
  }

  Unit at(int b, std::size_t j, int t) const {
    Unit u{b, j, t, {}};
    if (b < n_) u.s = seg_.of(halves_.of(b, t), j);
    return u;
  }
  // The first unit of block b on (all of them, from block 0).
  Unit first(int b = 0) const {
    const Unit u = at(b, 0, 0);
    return u.s.count ? u : next(u);
  }
  Unit next(const Unit& u) const {
    int b = u.b, t = u.t;
    std::size_t j = u.j;
    while (true) {
      if (++t == 2) {
        t = 0;
        if (++j == seg_.count) j = 0, ++b;
      }
      const Unit v = at(b, j, t);
      if (b >= n_ || v.s.count) return v;
    }
  }
  // The first unit of `st` from u on (inclusive) or after it.
  Unit next_in(const Stream& st, Unit u, bool inclusive) const {
    if (!inclusive) u = next(u);
    while (u.b < n_ && (u.t != st.t || !step(u, st.role, st.level).present)) u = next(u);
    return u;
  }

  static Tag tag_of(const Unit& u) { return block_tag(u.b, u.t); }

  // Whether `to`, taking u from this rank, handles it in its upward
  // stream (a reduce-scatter's sum going on to its parent; an all-gather's
  // copy from a child) rather than a downward one (or as its sink).
  // (At `to` the owner lies toward its parent unless in its subtree.)
  bool taken_upward(const Unit& u, int to) const {
    const bool below = double_tree_below(n_, u.t, to, u.b);
    return c_ == Collective::reduce_scatter ? !below : below;
  }

  // The first unit of `lane` from u on (inclusive) or after it.
  Unit next_in(const Lane& lane, Unit u, bool inclusive) const {
    if (!inclusive) u = next(u);
    while (u.b < n_) {
      if (u.t == lane.t) {
        const Step go = step(u, Role::unprompted);
        if (go.present && std::find(go.to.begin(), go.to.end(), lane.to) != go.to.end() &&
            taken_upward(u, lane.to) == lane.upward) {
          return u;
        }
      }
      u = next(u);
    }
    return u;
  }

  // Sends each lane's units on while fewer than kUnitsAhead of its sends,
  // or fewer than kLaneBytes, are open (those to an owner aside: see
  // send()).
  void post_unprompted() {
    for (Lane& lane : lanes_) {
      while (lane.next.b < n_ &&
             (lane.sent.open.size() < kUnitsAhead || lane.sent.open_bytes < kLaneBytes)) {
        send(lane.to, lane.next, lane.sent);
        lane.next = next_in(lane, lane.next, /*inclusive=*/false);
      }
    }
  }
  bool unprompted_posted() const {
    return std::all_of(lanes_.begin(), lanes_.end(), [&](const Lane& l) { return l.next.b >= n_; });
  }

  Request receive(int from, const Unit& u) {
    if (c_ == Collective::reduce_scatter) return comm_.irecv_reduce(from, u.s, op_, tag_of(u));
    return comm_.irecv(from, u.s.data, u.s.bytes(), tag_of(u));
  }

  // The first receive of st.posted, if it has one.
  void post_first(Stream& st) {
    const Step go = step(st.posted, st.role, st.level);
    if (go.from[0] >= 0) st.firsts.push_back(receive(go.from[0], st.posted));
    st.posted = next_in(st, st.posted, /*inclusive=*/false);
  }

  // The stream whose upward data an all-gather's downward stream forwards.
  const Stream& upward_of(const Stream& st) const {
    return streams_[upward_[static_cast<std::size_t>(st.t)]];
  }

  // Moves every stream on as far as it can without waiting, then waits
  // for whichever pending receive lands first; until all are through.
  void drive() {
    for (Stream& st : streams_) start(st);
    std::vector<Stream*> owners;
    std::vector<Sends*> reaped;
    std::vector<Request> pending;
    while (true) {
      bool moved = true;
      while (moved) {
        moved = false;
        for (Stream& st : streams_) {
          if (st.head.b < n_ && st.now.after_upward && upward_of(st).head.b < n_ &&
              !st.head.before(upward_of(st).head)) {
            continue;  // the upward stream has not received it yet
          }
          if (st.head.b < n_ && st.now.after_upward) {
            finish(st);
            moved = true;
          }
        }
      }
      owners.clear();
      pending.clear();
      for (Stream& st : streams_) {
        if (st.head.b >= n_ || st.now.after_upward) continue;
        owners.push_back(&st);
        pending.push_back(std::move(st.k == 0 ? st.firsts.front() : st.more));
      }
      post_unprompted();
      if (owners.empty() && unprompted_posted()) {
        for (Stream& st : streams_) {
          GRADEX_ENFORCE(st.head.b >= n_, "a tree block stream is stuck at block ", st.head.b);
        }
        return;
      }
      // The oldest send of the streams' and of each lane is reaped
      // whenever it completes, alongside the receives: a rank blocked on a
      // send could hold up the receives its receiver needs first. (With no
      // receive left it waits for its lanes' sends alone: their receivers
      // take them in order.)
      reaped.clear();
      if (!sends_.open.empty()) reaped.push_back(&sends_);
      for (Lane& lane : lanes_) {
        if (!lane.sent.open.empty()) reaped.push_back(&lane.sent);
      }
      for (Sends* open : reaped) pending.push_back(std::move(open->open.front()));
      const std::size_t done = comm_.wait_any(pending);
      for (std::size_t i = 0; i < owners.size(); ++i) {
        if (i != done) (owners[i]->k == 0 ? owners[i]->firsts.front() : owners[i]->more) = std::move(pending[i]);
      }
      for (std::size_t i = 0; i < reaped.size(); ++i) {
        if (owners.size() + i == done) {
          reaped[i]->pop();
        } else {
          reaped[i]->open.front() = std::move(pending[owners.size() + i]);
        }
      }
      if (done < owners.size()) landed(*owners[done]);
    }
  }

  void start(Stream& st) {
    st.k = 0;
    if (st.head.b < n_) st.now = step(st.head, st.role, st.level);
  }

  // The pending receive of st's head has landed: the next one of the unit
  // (reduce-scatter), or the sends.
  void landed(Stream& st) {
    if (st.k == 0) st.firsts.pop_front();
    while (++st.k < st.now.from.size() && st.now.from[st.k] < 0) {}
    if (st.k < st.now.from.size()) {
      st.more = receive(st.now.from[st.k], st.head);
      return;
    }
    finish(st);
  }

  // Sends st's head on and moves to its next unit.
  void finish(Stream& st) {
    for (int to : st.now.to) {
      if (to >= 0) send(to, st.head, sends_);
    }
    st.head = next_in(st, st.head, /*inclusive=*/false);
    start(st);
    if (st.posted.b < n_) post_first(st);
  }

  // Sends u to `to`, its request kept in `open`; or, to the owner, apart:
  // a reduce-scatter's owner takes its own block at its end, and the sends
  // reaped oldest first must not be held up behind one to it.
  void send(int to, const Unit& u, Sends& open) {
    Request out = comm_.isend(to, u.s.data, u.s.bytes(), tag_of(u));
    if (to == u.b) {
      to_owners_.push_back(std::move(out));
    } else {
      open.push(std::move(out), u.s.bytes());
    }
  }

  Comm& comm_;
  Collective c_;
  ReduceOp op_;
  int n_;
  int r_;
  HalfBlocks halves_;
  Segmentation seg_;
  std::vector<Stream> streams_;
  std::size_t upward_[2] = {0, 0};  // each tree's upward stream
  Place places_[2];                 // this rank's place in each tree
  Sends sends_;                           // the streams' sends
  std::vector<Lane> lanes_;               // the unprompted units' sends
  std::vector<Request> to_owners_;        // sends to a unit's owner
};

void check_collective(Collective c) {
  GRADEX_ENFORCE(c == Collective::reduce_scatter || c == Collective::all_gather,
                 "the tree's block collectives are reduce-scatter and all-gather, not ",
                 collective_name(c));
}

}  // namespace

bool double_tree_below(int n, int which, int top, int rank) {
  if (which == 0) return inorder_below(n, top, rank);
  // Tree B relabels tree A (allreduce/tree.cpp, double_tree): undo it.
  const bool shift = n % 2 == 1;
  auto role = [&](int x) { return shift ? (x - 1 + n) % n : n - 1 - x; };
  return inorder_below(n, role(top), role(rank));
}

TreeRoute tree_route(int n, int which, int rank, int owner) {
  return route_via(double_tree(n, rank, which), n, which, rank, owner);
}

void tree_block_collective(Comm& comm, Collective c, Tensor data, ReduceOp op,
                           std::size_t segment_bytes) {
  check_collective(c);
  const int n = comm.size();
  if (n == 1 || data.count == 0) return;
  GRADEX_ENFORCE(block_tag(n - 1, 1) < kSchemeTagLimit, "a tree's block collective over ", n,
                 " ranks would need tags beyond 2^22");
  TreeBlocks(comm, c, data, op, segment_bytes).run();
}

// Each half-block leaves a rank once toward its owner (reduce-scatter) and
// arrives from every farther neighbour; an all-gather is the mirror image.
Traffic tree_block_traffic(Collective c, int n, int rank, std::size_t count, DType dtype,
                           std::size_t segment_bytes) {
  check_collective(c);
  if (n == 1 || count == 0) return {};
  const BlockSplit blocks{count, static_cast<std::size_t>(n)};
  const Segmentation seg((blocks.size(0) + 1) / 2, segment_bytes, dtype);
  std::uint64_t near_bytes = 0, near_messages = 0;  // with the neighbour nearer the owner
  std::uint64_t far_bytes = 0, far_messages = 0;    // with the others
  for (int b = 0; b < n; ++b) {
    for (int t = 0; t < 2; ++t) {
      const std::size_t elems = half_size(blocks, b, t);
      const TreeRoute route = tree_route(n, t, rank, b);
      const auto near = static_cast<std::uint64_t>(route.toward >= 0);
      const auto far = static_cast<std::uint64_t>(route.away_count());
      near_bytes += near * elems * dtype_size(dtype);
      near_messages += near * seg.nonempty(elems);
      far_bytes += far * elems * dtype_size(dtype);
      far_messages += far * seg.nonempty(elems);
    }
  }
  if (c == Collective::reduce_scatter) return {near_bytes, far_bytes, near_messages, far_messages};
  return {far_bytes, near_bytes, far_messages, near_messages};
}

double tree_block_model_time(Collective c, int n, std::size_t bytes, const Topology& topology,
                             std::size_t segment_bytes) {
  check_collective(c);
  if (n <= 1 || bytes == 0) return 0;
  // Bytes per port, both trees at once: what each rank sends and receives
  // per neighbour, on the port it reaches that neighbour by.
  std::map<PortId, double> out, in;
  const BlockSplit blocks{bytes, static_cast<std::size_t>(n)};
  const bool gather = c == Collective::all_gather;
  std::vector<std::pair<int, int>> edges;  // (child, parent) of either tree
  for (int t = 0; t < 2; ++t) {
    for (int r = 0; r < n; ++r) {
      if (const int p = double_tree(n, r, t).parent; p >= 0) edges.emplace_back(r, p);
      for (int b = 0; b < n; ++b) {
        const auto part = static_cast<double>(half_size(blocks, b, t));
        const TreeRoute route = tree_route(n, t, r, b);
        // Reduce-scatter: r sends toward b and hears from the others;
        // all-gather the reverse.
        if (route.toward >= 0) (gather ? in : out)[port_to(topology, r, route.toward)] += part;
        for (int other : route.away) {
          if (other >= 0) (gather ? out : in)[port_to(topology, r, other)] += part;
        }
      }
    }
  }
  const double segment =
      std::min(static_cast<double>(segment_bytes), std::max(1.0, bytes / (2.0 * n)));
  double busiest = 0;  // seconds
  for (const auto* load : {&out, &in}) {
    for (const auto& [port, port_bytes] : *load) {
      const LinkSpec& l = port.inter ? topology.inter : topology.intra;
      if (l.unlimited()) continue;
      busiest = std::max(busiest, port_bytes * (l.wire_bytes(segment) / segment) / l.bytes_per_second);
    }
  }
  // The fill: the last half-block to be summed (or spread) crosses the
  // longest path of its tree, from one leaf up and down to another, a hop
  // per edge over the slowest link.
  LinkSpec slowest = topology.link(edges.front().first, edges.front().second);
  for (const auto& [a, b] : edges) {
    const LinkSpec& l = topology.link(a, b);
    if (message_time(l, 1e6) > message_time(slowest, 1e6)) slowest = l;
  }
  const double per_byte = slowest.unlimited() ? 0.0 : 1.0 / slowest.bytes_per_second;
  const int hops = std::max({1, tree_diameter(n, 0), tree_diameter(n, 1)});
  return busiest + hops * slowest.delay(segment) + (hops - 1) * slowest.wire_bytes(segment) * per_byte;
}

}  // namespace gradex
