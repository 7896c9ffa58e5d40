#include "ps/parameter_server.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "allreduce/ring.h"
#include "common/cost_model.h"
#include "common/errors.h"
#include "ps/pattern.h"
#include "ps/protocol.h"
#include "ps/push_pull_round.h"
#include "ps/server.h"
#include "ps/worker.h"

namespace gradex {

ParameterServerScheme::ParameterServerScheme(SchemeOptions options, bool pipelined,
                                             bool in_network)
    : Scheme(std::move(options)),
      layout_(this->options().workers, this->options().servers, this->options().placement),
      pipelined_(pipelined),
      in_network_(in_network),
      memory_(layout_.servers()) {}

std::size_t ParameterServerScheme::chunk(DType dtype) const {
  if (!pipelined_) return 0;
  return std::max<std::size_t>(1, options().segment_bytes / dtype_size(dtype));
}

bool ParameterServerScheme::provides(Collective c) const {
  // Hybrid moves the workers' keys round a ring of them (worker.cpp), an
  // all-reduce's schedule.
  return c == Collective::all_reduce || layout_.placement() != ServerPlacement::hybrid;
}

void ParameterServerScheme::round(Comm& comm, Tensor data, ReduceOp op, Collective c) {
  GRADEX_ENFORCE_EQ(comm.size(), endpoints(), "parameter server group size");
  GRADEX_ENFORCE(provides(c), "this parameter server does not run ", collective_name(c));
  if (comm.rank() < workers()) {
    worker_round(comm, layout_, chunk(data.dtype), data, op, memory_, c);
    return;
  }
  // A dedicated endpoint runs exactly one server. Its window holds
  // kChunksInFlight chunks of its share of the workers (protocol.h), and
  // at least a worker's window: a few servers answer all their workers at
  // once, as before windows (a window of 16 replies let a single server's
  // first workers start their next bucket early: 24% shorter training
  // steps on 64 workers), and with as many servers as workers (in_network:
  // a switch port per GPU) each holds a window, so what the servers hold
  // together grows as the workers, not as workers x servers (but in a
  // broadcast, push_pull_round.cpp). The hybrid's servers answer each
  // chunk's workers all at once (unbounded, gated to kChunksInFlight
  // chunks): its workers post every push and pull up front
  // (hybrid_round), and its k servers, numbered after the workers' own,
  // all take and answer the workers in one order (n-1 down to 0,
  // ServerLayout::server_at), so a window would send every server's
  // replies to the same few workers at once, beside those workers' ring
  // (20% longer on the spine scenario's 32 and 64 workers).
  RoundWindow window;
  const int servers = layout_.dedicated();
  const auto share = static_cast<std::size_t>((workers() + servers - 1) / servers);
  window.messages = std::max(window.messages, kChunksInFlight * share);
  if (layout_.placement() == ServerPlacement::hybrid) window = kUnboundedWindow;
  push_pull_round(comm, layout_, PsPattern(c, data.count, workers()), chunk(data.dtype), data, op,
                  memory_, window);
}

void ParameterServerScheme::allreduce(Comm& comm, Tensor data, ReduceOp op) {
  round(comm, data, op, Collective::all_reduce);
}

void ParameterServerScheme::reduce_scatter(Comm& comm, Tensor data, ReduceOp op) {
  round(comm, data, op, Collective::reduce_scatter);
}

void ParameterServerScheme::all_gather(Comm& comm, Tensor data) {
  round(comm, data, ReduceOp::sum, Collective::all_gather);
}

void ParameterServerScheme::broadcast(Comm& comm, Tensor data) {
  round(comm, data, ReduceOp::sum, Collective::broadcast);
}

Traffic ParameterServerScheme::expected_traffic(int endpoint, std::size_t count,
                                                DType dtype) const {
  GRADEX_ENFORCE(endpoint >= 0 && endpoint < endpoints(), "endpoint ", endpoint);
  const std::uint64_t elem = dtype_size(dtype);
  const int servers = layout_.servers();
  Traffic t;
  // Hybrid: the workers' own servers' keys go round a ring of the workers
  // (worker.cpp), and only the dedicated servers are pushed to and serve.
  const bool hybrid = layout_.placement() == ServerPlacement::hybrid;
  const int first_pushed = hybrid ? workers() : 0;
  if (hybrid && endpoint < workers()) {
    const std::size_t own = layout_.colocated_keys(count);
    const std::size_t segment = chunk(dtype) * elem;
    t += ring_reduce_scatter_traffic(endpoint, workers(), own, dtype, segment);
    t += ring_all_gather_traffic(endpoint, workers(), own, dtype, segment);
  }
  // Worker side: one push out and one pull in per chunk of each non-empty
  // shard whose server runs elsewhere (a shard hosted here is a local copy).
  if (endpoint < workers()) {
    for (int k = first_pushed; k < servers; ++k) {
      const std::uint64_t n = layout_.shard(count, k).count;
      if (n == 0 || layout_.host(k) == endpoint) continue;
      const std::uint64_t chunks = chunk_count(n, chunk(dtype));
      t.bytes_sent += n * elem;
      t.messages_sent += chunks;
      t.bytes_received += n * elem;
      t.messages_received += chunks;
    }
  }
  // Server side: one push in and one pull out per chunk and per worker
  // other than this endpoint, for each non-empty shard served here.
  const std::uint64_t peers = static_cast<std::uint64_t>(workers()) - (endpoint < workers());
  for (int k : layout_.hosted_on(endpoint)) {
    if (k < first_pushed) continue;
    const std::uint64_t n = layout_.shard(count, k).count;
    if (n == 0) continue;
    const std::uint64_t chunks = chunk_count(n, chunk(dtype));
    t.bytes_received += peers * n * elem;
    t.messages_received += peers * chunks;
    t.bytes_sent += peers * n * elem;
    t.messages_sent += peers * chunks;
  }
  return t;
}

Traffic ParameterServerScheme::collective_traffic(Collective c, int endpoint, std::size_t count,
                                                  DType dtype) const {
  if (c == Collective::all_reduce) return expected_traffic(endpoint, count, dtype);
  GRADEX_ENFORCE(endpoint >= 0 && endpoint < endpoints(), "endpoint ", endpoint);
  GRADEX_ENFORCE(provides(c), "this parameter server does not run ", collective_name(c));
  const PsPattern pattern(c, count, workers());
  const std::uint64_t elem = dtype_size(dtype);
  Traffic t;
  // One message per non-empty part of a chunk (server.cpp, worker.cpp);
  // messages to oneself are local copies.
  const auto add = [&](KeyRange part, std::uint64_t& bytes, std::uint64_t& messages) {
    bytes += part.count * elem;
    messages += part.count > 0 ? 1 : 0;
  };
  for (int k = 0; k < layout_.servers(); ++k) {
    const KeyRange shard = layout_.shard(count, k);
    const int host = layout_.host(k);
    const bool served_here = host == endpoint;
    if (!served_here && endpoint >= workers()) continue;
    for (std::size_t j = 0; j < chunk_count(shard.count, chunk(dtype)); ++j) {
      const KeyRange r = chunk_range(shard, chunk(dtype), j);
      if (!served_here) {  // this worker's push and pull
        add(pattern.pushed(endpoint, r), t.bytes_sent, t.messages_sent);
        add(pattern.pulled(endpoint, r), t.bytes_received, t.messages_received);
        continue;
      }
      for (int w = 0; w < workers(); ++w) {  // the server's side of every other worker's
        if (w == endpoint) continue;
        add(pattern.pushed(w, r), t.bytes_received, t.messages_received);
        add(pattern.pulled(w, r), t.bytes_sent, t.messages_sent);
      }
    }
  }
  return t;
}

double ParameterServerScheme::model_time(std::size_t bytes, const Topology& topology) const {
  return collective_model_time(Collective::all_reduce, bytes, topology);
}

double ParameterServerScheme::collective_model_time(Collective c, std::size_t bytes,
                                                    const Topology& topology) const {
  GRADEX_ENFORCE(provides(c), "this parameter server does not run ", collective_name(c));
  if (bytes == 0) return 0;
  // Each port's bytes per phase: every worker's push of shard k to k's
  // host, then k's reply to every worker (f32 counts), on the port each
  // message really takes (a node's intra port or its NIC).
  const std::size_t count = bytes / dtype_size(DType::f32);
  const double elem = static_cast<double>(dtype_size(DType::f32));
  const int first_pushed = layout_.placement() == ServerPlacement::hybrid ? workers() : 0;
  const PsPattern pattern(c, count, workers());
  // Every worker's push (or the reply) of each shard from server `from`
  // on, in server then worker order, its bytes times `scale`. Generated,
  // not stored: n workers with a server each make n^2 of them.
  const auto exchanges = [&](bool push, int from, double scale) {
    return [&, push, from, scale](const auto& visit) {
      for (int k = from; k < layout_.servers(); ++k) {
        const KeyRange shard = layout_.shard(count, k);
        if (shard.count == 0) continue;
        const int host = layout_.host(k);
        for (int w = 0; w < workers(); ++w) {
          if (w == host) continue;  // a local copy
          // What w moves of the shard, in all its chunks (pattern.h).
          const KeyRange moved = push ? pattern.pushed(w, shard) : pattern.pulled(w, shard);
          const double bytes = static_cast<double>(moved.count) * elem;
          if (bytes > 0) visit(push ? Flow{w, host, bytes * scale} : Flow{host, w, bytes * scale});
        }
      }
    };
  };
  // Hybrid: the workers' own servers' keys go round a ring of the workers
  // instead (worker.cpp), rank w to w + 1: its reduce-scatter and its
  // all-gather each pass n-1 blocks of own / n over every hop, on the port
  // that hop really takes. (Counted as pushes and replies, the same bytes
  // would cross a NIC a node's GPUs share from every GPU, where the ring
  // crosses it once a node.) `scale` of them: half in each phase unpipelined.
  const std::size_t own = layout_.colocated_keys(count);
  const auto ring_hops = [&](double scale) {
    return [&, scale](const auto& visit) {
      const int n = workers();
      if (own == 0 || n < 2) return;
      const double hop = 2.0 * (n - 1) * static_cast<double>(own) * elem / n * scale;
      for (int w = 0; w < n; ++w) visit(Flow{w, (w + 1) % n, hop});
    };
  };
  // With none (one worker hosting every server: all local) every term
  // below is 0.
  const auto pushes = exchanges(true, first_pushed, 1.0), pulls = exchanges(false, first_pushed, 1.0);
  if (!pipelined_) {
    const auto half_ring = ring_hops(0.5);
    const auto pushes_and_half = [&](const auto& visit) {
      pushes(visit);
      half_ring(visit);
    };
    const auto pulls_and_half = [&](const auto& visit) {
      pulls(visit);
      half_ring(visit);
    };
    return slowest_flow_of(topology, pushes_and_half) + slowest_flow_of(topology, pulls_and_half);
  }
  // Push and pull overlap: each port's bytes in both phases pass once, and
  // the pipeline fills (every worker's first chunk in before any sum goes
  // out) or drains (the last chunk's sums out) by one chunk's share of the
  // lighter phase: pushes P and pulls Q through a port in C chunks take
  // max(P + Q / C, P / C + Q). An all-reduce's phases weigh the same; a
  // reduce-scatter's pulls and an all-gather's pushes are 1/n of the other.
  const auto ring = ring_hops(1.0);
  const auto both = [&](const auto& visit) {
    pushes(visit);
    pulls(visit);
    ring(visit);
  };
  double largest = 0;  // the largest pushed shard: its chunks are the last to drain
  for (int k = first_pushed; k < layout_.servers(); ++k) {
    largest = std::max(largest, static_cast<double>(layout_.shard(count, k).count));
  }
  double fill = 0;
  if (largest > 0) {
    const double share = std::min(1.0, static_cast<double>(chunk(DType::f32)) / largest);
    fill = std::min(slowest_flow_of(topology, exchanges(true, first_pushed, share)),
                    slowest_flow_of(topology, exchanges(false, first_pushed, share)));
  }
  // Hybrid's ring runs beside the dedicated servers' pipeline, on the same
  // NICs: the busiest port moves both's bytes (pushes, pulls and the
  // ring's hops) after the pipeline fills, while the ring's 2 (n-1) steps
  // are a chain of consecutive hops, each paying its link's latency and
  // its segment's transfer (the ring's own model, rings_time: on nodes of
  // 8 GPUs a NIC once every 8 hops, NVLink the other 7). The slower of the
  // two paces the round: where the blocks are small the chain does, and
  // the ports' bytes hide behind it; where they are large the ports do,
  // and hide the chain's latencies.
  double ring_chain = 0;
  if (own > 0 && workers() > 1) {
    std::vector<int> members(static_cast<std::size_t>(workers()));
    for (int w = 0; w < workers(); ++w) members[static_cast<std::size_t>(w)] = w;
    // Beside the ring each worker's NIC carries a flow to each of the k
    // dedicated servers, which take B/n of it each (a server's NIC shared
    // by the n workers): the ring has (n-k)/n of it, as Theorem 1's split
    // has it (k < n wherever the workers hold keys).
    const int dedicated = layout_.servers() - workers();
    const double share = static_cast<double>(workers() - dedicated) / workers();
    ring_chain = ring_allreduce_model_time(topology, members, static_cast<double>(own) * elem,
                                           chunk(DType::f32) * dtype_size(DType::f32), share);
  }
  return std::max(slowest_flow_of(topology, both) + fill, ring_chain);
}

}  // namespace gradex
