#include "ps/in_network_hierarchical.h"

#include <algorithm>
#include <cstddef>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "allreduce/tree.h"
#include "common/cost_model.h"
#include "common/errors.h"

namespace gradex {

namespace {

// One tag per hop, so that each (peer, tag) queue carries one kind of
// message, chunk after chunk in order.
constexpr Tag kContribution = 0;  // GPU -> its node switch's port
constexpr Tag kNodeSum = 1;       // node port j -> local rank j
constexpr Tag kToRail = 2;        // local rank l -> rail l's port
constexpr Tag kRailSum = 3;       // rail l's port -> every node's local rank l
constexpr Tag kFinished = 4;      // local rank l -> node port l
constexpr Tag kSpread = 5;        // node port j -> the node's GPUs
// Across the nodes on trees: half h of a piece up tree h to the parent,
// and its sum back down.
constexpr Tag kUp[2] = {6, 7};
constexpr Tag kDown[2] = {8, 9};

// Chunks a GPU keeps under way, per hop of a chunk's round trip. A chunk
// takes each hop in about the busiest port's time per chunk or less, so a
// window of as many chunks as hops keeps that port busy only if no hop
// ever waits; twice as many leave room. Each hop has its own connection
// (connection_per_tag), so the chunks of a window queue on it in order
// rather than share it. Simulated on DGX H100 nodes at 1 GiB (1 MiB
// segments), in_network_tree against its model: 8 chunks for every depth
// ran 1.21x it on 8 nodes and 1.41x on 16, where a chunk crosses 10 and 12
// hops; two per hop, 0.99x on both.
constexpr std::size_t kChunksPerHop = 2;

struct Part {
  std::size_t offset = 0;
  std::size_t count = 0;
};

// Who is where, and which elements each chunk, piece and half holds
// (the same on every endpoint, so an empty part is skipped on both sides).
struct Layout {
  Layout(std::size_t count, DType dtype, std::size_t segment_bytes, int workers, int per_node,
         bool tree)
      : tree(tree),
        w(workers),
        g(per_node),
        m(workers / per_node),
        count(count),
        per_chunk(static_cast<std::size_t>(per_node) *
                  std::max<std::size_t>(1, segment_bytes / dtype_size(dtype))),
        chunks((count + per_chunk - 1) / per_chunk),
        crossings(crossings_of()),
        window(kChunksPerHop * static_cast<std::size_t>(4 + 2 * crossings)) {}

  bool tree;  // across the nodes on trees, not through a switch
  int w, g, m;
  std::size_t count;
  std::size_t per_chunk;  // elements
  std::size_t chunks;
  // How many times a chunk crosses the nodes up and then down (hops 2 and
  // 3) one after the other: once through the switch; on trees, as many
  // times as the deepest tree has levels below its root.
  int crossings;
  // Chunks a GPU keeps under way: kChunksPerHop for each hop of a chunk's
  // round trip (to the node's port, to the carrier, 2 x crossings, back to
  // the port, to the GPUs).
  std::size_t window;

  Part chunk(std::size_t c) const {
    const std::size_t begin = c * per_chunk;
    return {begin, std::min(count, begin + per_chunk) - begin};
  }
  Part piece(std::size_t c, int j) const {
    const Part whole = chunk(c);
    const BlockSplit split{whole.count, static_cast<std::size_t>(g)};
    const auto at = static_cast<std::size_t>(j);
    return {whole.offset + split.offset(at), split.size(at)};
  }
  // The local rank that carries piece j of chunk c across the nodes, and
  // the piece local rank l carries: rotated by one each chunk. The round
  // trip through the carrier (the node sum out to it, the finished piece
  // back) adds a piece to one GPU's line to and from port j; rotated, it
  // falls on each line in turn, where a fixed carrier's line would pace
  // the port (max-min sharing gives each of a port's G lines 1/G of it,
  // and that one would carry twice the others' bytes).
  int carrier(std::size_t c, int j) const { return static_cast<int>((j + c) % g_u()); }
  int carried(std::size_t c, int l) const {
    return static_cast<int>((static_cast<std::size_t>(l) + g_u() - c % g_u()) % g_u());
  }
  // The piece rail l carries in chunk c.
  Part carried_piece(std::size_t c, int l) const { return piece(c, carried(c, l)); }
  // Half h of the piece rail l carries in chunk c, which goes across the
  // nodes on tree h.
  Part half(std::size_t c, int l, int h) const {
    const Part whole = piece(c, carried(c, l));
    const BlockSplit split{whole.count, 2};
    const auto at = static_cast<std::size_t>(h);
    return {whole.offset + split.offset(at), split.size(at)};
  }
  // Node k's links in tree h over the nodes.
  TreeLinks links(int k, int h) const { return double_tree(m, k, h); }
  int node_port(int worker) const { return w + worker; }
  int rail_port(int local) const { return 2 * w + local; }
  int worker(int node, int local) const { return node * g + local; }

 private:
  std::size_t g_u() const { return static_cast<std::size_t>(g); }
  int crossings_of() const {
    if (!tree) return 1;
    int deepest = 0;
    for (int h = 0; h < 2; ++h) {
      for (int k = 0; k < m; ++k) {
        int depth = 0;
        for (int node = k; links(node, h).parent >= 0; node = links(node, h).parent) ++depth;
        deepest = std::max(deepest, depth);
      }
    }
    return std::max(deepest, 1);
  }
};

// A port's memory: a slot per chunk that can be under way at once (the
// GPUs' window plus the one being summed), reused round-robin. A slot's
// sends must be done before it takes another chunk.
class Slots {
 public:
  Slots(bool phantom, std::size_t elements, DType dtype, std::size_t window)
      : count_(window + 1), dtype_(dtype), bytes_(phantom ? 0 : elements * dtype_size(dtype)),
        memory_(count_ * bytes_), sends_(count_) {}
  std::size_t count() const { return count_; }

  Tensor of(std::size_t chunk, std::size_t count) {
    std::byte* base = bytes_ == 0 ? nullptr : memory_.data() + (chunk % count_) * bytes_;
    return Tensor{base, count, dtype_};
  }
  std::vector<Request>& sends(std::size_t chunk) { return sends_[chunk % count_]; }
  void wait(Comm& comm, std::size_t chunk) {
    comm.wait_all(sends(chunk));
    sends(chunk).clear();
  }
  void wait_all(Comm& comm) {
    for (std::size_t c = 0; c < count_; ++c) wait(comm, c);
  }

 private:
  std::size_t count_;
  DType dtype_;
  std::size_t bytes_;
  std::vector<std::byte> memory_;
  std::vector<std::vector<Request>> sends_;
};

// Receives every source's `sum` into `acc`, the first copied, the others
// combined one at a time (two receive-reduces into one range would
// overlap). `serve` runs whenever `pending` completes meanwhile.
template <typename Serve>
void sum_into(Comm& comm, const std::vector<int>& sources, Tensor acc, ReduceOp combine, Tag tag,
              Request* pending, Serve serve) {
  for (std::size_t s = 0; s < sources.size(); ++s) {
    Request incoming = s == 0 ? comm.irecv(sources[s], acc.data, acc.bytes(), tag)
                              : comm.irecv_reduce(sources[s], acc, combine, tag);
    while (true) {
      if (pending == nullptr || !pending->pending()) {
        comm.wait(incoming);
        break;
      }
      Request both[2] = {std::move(incoming), std::move(*pending)};
      const std::size_t done = comm.wait_any(both);
      incoming = std::move(both[0]);
      *pending = std::move(both[1]);
      if (done == 0) break;
      pending = serve();
    }
  }
}

// Local rank l of node k: its chunks under way, at most the layout's window.
void run_gpu(Comm& comm, const Layout& at, Tensor data, ReduceOp combine) {
  const int r = comm.rank();
  const int k = r / at.g;
  const int l = r % at.g;
  const auto slice = [&](Part p) { return data.slice(p.offset, p.count); };
  struct Chunk {
    std::vector<Request> sends;
    std::size_t rail_left = 0;
    std::size_t spread_left = 0;
    bool summed = false;
  };
  std::vector<Chunk> chunks(at.chunks);
  // The next message each hop waits for, oldest chunk first; on trees,
  // from each child (adding its half in) and from the parent (the sum), by
  // tree: each queue hears from one peer on one tag, chunk after chunk.
  std::deque<std::pair<std::size_t, Request>> node_sums, rail_sums, spreads;
  std::deque<std::pair<std::size_t, Request>> from_child[2][2], from_parent[2];
  TreeLinks links[2];
  if (at.tree) links[0] = at.links(k, 0), links[1] = at.links(k, 1);

  // Piece l of chunk c holds the sum over every GPU: back to the node.
  const auto summed = [&](std::size_t c) {
    chunks[c].summed = true;
    const int j = at.carried(c, l);
    const Part mine = at.piece(c, j);
    if (at.g > 1 && mine.count > 0) {
      const Tensor t = slice(mine);
      chunks[c].sends.push_back(
          comm.isend(at.node_port(at.worker(k, j)), t.data, t.bytes(), kFinished));
    }
  };
  const auto tree_half = [&](std::size_t c, int h) { return slice(at.half(c, l, h)); };
  // Half h of chunk c holds the sum over every node: down the tree.
  const auto total = [&](std::size_t c, int h) {
    const Tensor t = tree_half(c, h);
    for (int child : links[h].children) {
      if (child >= 0) {
        chunks[c].sends.push_back(comm.isend(at.worker(child, l), t.data, t.bytes(), kDown[h]));
      }
    }
    if (--chunks[c].rail_left == 0) summed(c);
  };
  // Half h of chunk c holds its subtree's sum: to the parent, whose total
  // comes back into it (the parent answers only after taking this send);
  // the root has the total.
  const auto subtree_summed = [&](std::size_t c, int h) {
    if (links[h].parent < 0) {
      total(c, h);
      return;
    }
    const Tensor t = tree_half(c, h);
    const int parent = at.worker(links[h].parent, l);
    chunks[c].sends.push_back(comm.isend(parent, t.data, t.bytes(), kUp[h]));
    from_parent[h].emplace_back(c, comm.irecv(parent, t.data, t.bytes(), kDown[h]));
  };
  // Child i of tree h adds its half of chunk c in next (one at a time: two
  // receive-reduces into one range would overlap), if there is one.
  const auto add_child = [&](std::size_t c, int h, int i) {
    const int child = i < 2 ? links[h].children[static_cast<std::size_t>(i)] : -1;
    if (child < 0) {
      subtree_summed(c, h);
      return;
    }
    from_child[h][i].emplace_back(
        c, comm.irecv_reduce(at.worker(child, l), tree_half(c, h), combine, kUp[h]));
  };
  // Piece l of chunk c holds the node's sum: across the nodes on rail l.
  const auto node_summed = [&](std::size_t c) {
    Chunk& ch = chunks[c];
    if (at.m > 1 && at.tree) {
      bool halves[2];
      for (int h = 0; h < 2; ++h) {
        halves[h] = at.half(c, l, h).count > 0;
        ch.rail_left += halves[h] ? 1 : 0;
      }
      for (int h = 0; h < 2; ++h) {
        if (halves[h]) add_child(c, h, 0);
      }
    } else if (at.m > 1) {
      if (const Part p = at.carried_piece(c, l); p.count > 0) {
        const Tensor t = slice(p);
        ch.sends.push_back(comm.isend(at.rail_port(l), t.data, t.bytes(), kToRail));
        rail_sums.emplace_back(c, comm.irecv(at.rail_port(l), t.data, t.bytes(), kRailSum));
        ++ch.rail_left;
      }
    }
    if (ch.rail_left == 0) summed(c);
  };
  // Every receive of chunk c lands in place: a port answers only after it
  // has taken this GPU's send of the same elements.
  const auto start = [&](std::size_t c) {
    Chunk& ch = chunks[c];
    if (at.g > 1) {
      for (int j = 0; j < at.g; ++j) {
        const Part p = at.piece(c, j);
        if (p.count == 0) continue;
        const Tensor t = slice(p);
        const int port = at.node_port(at.worker(k, j));
        ch.sends.push_back(comm.isend(port, t.data, t.bytes(), kContribution));
        spreads.emplace_back(c, comm.irecv(port, t.data, t.bytes(), kSpread));
        ++ch.spread_left;
      }
      if (at.m == 1) {
        ch.summed = true;  // one node: its switch spreads the sum at once
        return;
      }
      const int j = at.carried(c, l);
      if (const Part mine = at.piece(c, j); mine.count > 0) {
        const Tensor t = slice(mine);
        node_sums.emplace_back(
            c, comm.irecv(at.node_port(at.worker(k, j)), t.data, t.bytes(), kNodeSum));
        return;
      }
    }
    node_summed(c);  // nothing to sum inside the node
  };

  // Every queue of messages this GPU waits for, and what the next one
  // that lands completes.
  enum class Hop { node_sum, rail_sum, spread, from_child, from_parent };
  struct Source {
    std::deque<std::pair<std::size_t, Request>>* queue;
    Hop hop;
    int tree = 0;   // from_child, from_parent: which tree
    int child = 0;  // from_child: which of its children
  };
  const Source sources[] = {{&node_sums, Hop::node_sum},
                            {&rail_sums, Hop::rail_sum},
                            {&spreads, Hop::spread},
                            {&from_child[0][0], Hop::from_child, 0, 0},
                            {&from_child[0][1], Hop::from_child, 0, 1},
                            {&from_child[1][0], Hop::from_child, 1, 0},
                            {&from_child[1][1], Hop::from_child, 1, 1},
                            {&from_parent[0], Hop::from_parent, 0},
                            {&from_parent[1], Hop::from_parent, 1}};

  std::size_t started = 0;
  std::size_t oldest = 0;  // the oldest chunk not finished here
  while (true) {
    // Retire finished chunks and start new ones, until neither can go on
    // (a chunk with nothing to move finishes as it starts).
    for (bool moved = true; moved;) {
      moved = false;
      while (oldest < started && chunks[oldest].summed && chunks[oldest].spread_left == 0) {
        comm.wait_all(chunks[oldest].sends);
        chunks[oldest].sends = {};
        ++oldest;
        moved = true;
      }
      while (started < at.chunks && started < oldest + at.window) {
        start(started++);
        moved = true;
      }
    }
    if (oldest == at.chunks) break;
    // Whichever hop's next message comes first.
    std::vector<Request> fronts;
    std::vector<const Source*> from;
    for (const Source& source : sources) {
      if (source.queue->empty()) continue;
      fronts.push_back(std::move(source.queue->front().second));
      from.push_back(&source);
    }
    GRADEX_ENFORCE(!fronts.empty(), "in_network_hierarchical: rank ", r, " waits for nothing");
    const std::size_t done = comm.wait_any(fronts);
    for (std::size_t i = 0; i < fronts.size(); ++i) {
      if (i != done) from[i]->queue->front().second = std::move(fronts[i]);
    }
    const Source& source = *from[done];
    const std::size_t c = source.queue->front().first;
    source.queue->pop_front();
    switch (source.hop) {
      case Hop::node_sum: node_summed(c); break;
      case Hop::rail_sum:
        if (--chunks[c].rail_left == 0) summed(c);
        break;
      case Hop::spread: --chunks[c].spread_left; break;
      case Hop::from_child: add_child(c, source.tree, source.child + 1); break;  // the next, or up
      case Hop::from_parent: total(c, source.tree); break;
    }
  }
}

// Port j of node k's switch: sums piece j of every chunk over the node's
// GPUs, hands the sum to local rank j, and multicasts what comes back.
void run_node_port(Comm& comm, const Layout& at, int worker, DType dtype, ReduceOp combine) {
  if (at.g == 1) return;
  const int k = worker / at.g;
  const int j = worker % at.g;
  std::vector<int> gpus;
  for (int l = 0; l < at.g; ++l) gpus.push_back(at.worker(k, l));
  Slots slots(comm.phantom_payloads(), at.piece(0, j).count, dtype, at.window);
  std::deque<std::pair<std::size_t, Request>> finished;  // chunks whose sum is away
  // The oldest chunk whose sum has come back: to every GPU of the node.
  const auto spread = [&]() -> Request* {
    const std::size_t c = finished.front().first;
    finished.pop_front();
    const Tensor t = slots.of(c, at.piece(c, j).count);
    for (int gpu : gpus) slots.sends(c).push_back(comm.isend(gpu, t.data, t.bytes(), kSpread));
    return finished.empty() ? nullptr : &finished.front().second;
  };
  for (std::size_t c = 0; c < at.chunks; ++c) {
    const Part p = at.piece(c, j);
    if (p.count == 0) continue;
    // The slot's last chunk must have been spread, and its sends done.
    while (!finished.empty() && finished.front().first + slots.count() <= c) {
      comm.wait(finished.front().second);
      spread();
    }
    slots.wait(comm, c);
    const Tensor acc = slots.of(c, p.count);
    sum_into(comm, gpus, acc, combine, kContribution,
             finished.empty() ? nullptr : &finished.front().second, spread);
    if (at.m == 1) {  // one node: the node's sum is the sum
      for (int gpu : gpus) slots.sends(c).push_back(comm.isend(gpu, acc.data, acc.bytes(), kSpread));
      continue;
    }
    const int carrier = at.worker(k, at.carrier(c, j));
    slots.sends(c).push_back(comm.isend(carrier, acc.data, acc.bytes(), kNodeSum));
    finished.emplace_back(c, comm.irecv(carrier, acc.data, acc.bytes(), kFinished));
  }
  while (!finished.empty()) {
    comm.wait(finished.front().second);
    spread();
  }
  slots.wait_all(comm);
}

// Rail l's port on the switch between the nodes: sums the piece rail l
// carries of every chunk over the nodes and sends it back to each.
void run_rail_port(Comm& comm, const Layout& at, int l, DType dtype, ReduceOp combine) {
  if (at.m == 1) return;
  std::vector<int> gpus;
  for (int k = 0; k < at.m; ++k) gpus.push_back(at.worker(k, l));
  // Sized for the largest piece: piece 0 of a whole chunk (the carried
  // piece rotates).
  Slots slots(comm.phantom_payloads(), at.piece(0, 0).count, dtype, at.window);
  for (std::size_t c = 0; c < at.chunks; ++c) {
    const Part p = at.carried_piece(c, l);
    if (p.count == 0) continue;
    slots.wait(comm, c);
    const Tensor acc = slots.of(c, p.count);
    sum_into(comm, gpus, acc, combine, kToRail, nullptr, [] { return nullptr; });
    for (int gpu : gpus) slots.sends(c).push_back(comm.isend(gpu, acc.data, acc.bytes(), kRailSum));
  }
  slots.wait_all(comm);
}

// Every hop's flows for the largest chunk (chunk 0), hop by hop.
std::vector<std::vector<Flow>> hops(const Layout& at, double elem) {
  std::vector<std::vector<Flow>> hop(6);
  const auto bytes = [&](Part p) { return static_cast<double>(p.count) * elem; };
  for (int r = 0; r < at.w; ++r) {
    const int k = r / at.g;
    const int l = r % at.g;
    if (at.g > 1) {
      for (int j = 0; j < at.g; ++j) {
        const double b = bytes(at.piece(0, j));
        if (b == 0) continue;
        hop[0].push_back({r, at.node_port(at.worker(k, j)), b});
        hop[5].push_back({at.node_port(at.worker(k, j)), r, b});
      }
      const int carried = at.node_port(at.worker(k, at.carried(0, l)));
      if (const double b = bytes(at.piece(0, at.carried(0, l))); b > 0 && at.m > 1) {
        hop[1].push_back({carried, r, b});
        hop[4].push_back({r, carried, b});
      }
    }
    if (at.m > 1 && at.tree) {
      // Up to the parent, and the sum back down, on each tree.
      for (int h = 0; h < 2; ++h) {
        const double b = bytes(at.half(0, l, h));
        const int parent = at.links(k, h).parent;
        if (b == 0 || parent < 0) continue;
        hop[2].push_back({r, at.worker(parent, l), b});
        hop[3].push_back({at.worker(parent, l), r, b});
      }
    } else if (at.m > 1) {
      if (const double b = bytes(at.carried_piece(0, l)); b > 0) {
        hop[2].push_back({r, at.rail_port(l), b});
        hop[3].push_back({at.rail_port(l), r, b});
      }
    }
  }
  return hop;
}

}  // namespace

InNetworkHierarchicalScheme::InNetworkHierarchicalScheme(SchemeOptions options, Across across)
    : Scheme(std::move(options)), across_(across) {
  check_whole_nodes(this->options());
}

void InNetworkHierarchicalScheme::allreduce(Comm& comm, Tensor data, ReduceOp op) {
  GRADEX_ENFORCE_EQ(comm.size(), endpoints(), "in_network_hierarchical group size");
  const Layout at(data.count, data.dtype, options().segment_bytes, workers(),
                  options().ranks_per_node, across_ == Across::tree);
  const ReduceOp combine = combining_op(op);
  const int me = comm.rank();
  if (me < at.w) {
    GRADEX_ENFORCE(!data.phantom() || comm.phantom_payloads(), "a worker needs its gradient, rank ",
                   me);
    run_gpu(comm, at, data, combine);
    finish_reduce(data, op, workers());
  } else if (me < 2 * at.w) {
    run_node_port(comm, at, me - at.w, data.dtype, combine);
  } else {
    run_rail_port(comm, at, me - 2 * at.w, data.dtype, combine);
  }
}

Traffic InNetworkHierarchicalScheme::expected_traffic(int endpoint, std::size_t count,
                                                      DType dtype) const {
  GRADEX_ENFORCE(endpoint >= 0 && endpoint < endpoints(), "endpoint ", endpoint);
  const Layout at(count, dtype, options().segment_bytes, workers(), options().ranks_per_node,
                  across_ == Across::tree);
  const std::uint64_t elem = dtype_size(dtype);
  Traffic t;
  const auto sent = [&](Part p, std::uint64_t times) {
    t.bytes_sent += times * p.count * elem;
    t.messages_sent += p.count > 0 ? times : 0;
  };
  const auto received = [&](Part p, std::uint64_t times) {
    t.bytes_received += times * p.count * elem;
    t.messages_received += p.count > 0 ? times : 0;
  };
  const auto g = static_cast<std::uint64_t>(at.g);
  const auto m = static_cast<std::uint64_t>(at.m);
  for (std::size_t c = 0; c < at.chunks; ++c) {
    if (endpoint < at.w) {
      const int l = endpoint % at.g;
      if (at.g > 1) {
        for (int j = 0; j < at.g; ++j) {
          sent(at.piece(c, j), 1);      // contribution
          received(at.piece(c, j), 1);  // spread
        }
        if (at.m > 1) {
          received(at.piece(c, at.carried(c, l)), 1);  // node sum
          sent(at.piece(c, at.carried(c, l)), 1);      // finished
        }
      }
      if (at.m > 1 && at.tree) {
        // Up from each child and to the parent, then down the same links.
        const int k = endpoint / at.g;
        for (int h = 0; h < 2; ++h) {
          const TreeLinks links = at.links(k, h);
          const auto degree =
              static_cast<std::uint64_t>(links.child_count() + (links.parent >= 0 ? 1 : 0));
          sent(at.half(c, l, h), degree);
          received(at.half(c, l, h), degree);
        }
      } else if (at.m > 1) {
        sent(at.carried_piece(c, l), 1);
        received(at.carried_piece(c, l), 1);
      }
    } else if (endpoint < 2 * at.w) {
      if (at.g == 1) continue;
      // The GPUs' contributions in and the multicast out, and across nodes
      // the node sum out and the finished piece in.
      const Part p = at.piece(c, (endpoint - at.w) % at.g);
      received(p, g + (at.m > 1 ? 1 : 0));
      sent(p, g + (at.m > 1 ? 1 : 0));
    } else if (at.m > 1) {
      const Part p = at.carried_piece(c, endpoint - 2 * at.w);
      received(p, m);
      sent(p, m);
    }
  }
  return t;
}

double InNetworkHierarchicalScheme::model_time(std::size_t bytes, const Topology& topology) const {
  const std::size_t count = bytes / dtype_size(DType::f32);
  const Layout at(count, DType::f32, options().segment_bytes, workers(), options().ranks_per_node,
                  across_ == Across::tree);
  if (at.chunks == 0 || workers() == 1) return 0;
  const auto hop = hops(at, static_cast<double>(dtype_size(DType::f32)));
  // The first chunk hop by hop, each hop waiting for the one before (on
  // trees up every level and down again) ...
  double first = 0;
  std::vector<Flow> all;
  for (std::size_t i = 0; i < hop.size(); ++i) {
    const int times = i == 2 || i == 3 ? at.crossings : 1;
    first += times * slowest_flow(topology, hop[i]);
    all.insert(all.end(), hop[i].begin(), hop[i].end());
  }
  // ... then the rest at the busiest port's pace, every hop's bytes of a
  // chunk through it at once.
  const double per_chunk = busiest_port_time(topology, all);
  const double rest = static_cast<double>(count - at.chunk(0).count) /
                      static_cast<double>(at.chunk(0).count);
  return first + rest * per_chunk;
}

}  // namespace gradex
