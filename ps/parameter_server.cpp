#include "ps/parameter_server.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "common/cost_model.h"
#include "common/errors.h"
#include "ps/server.h"
#include "ps/worker.h"

namespace gradex {

ParameterServerScheme::ParameterServerScheme(SchemeOptions options, bool pipelined)
    : Scheme(std::move(options)),
      layout_(this->options().workers, this->options().servers, this->options().placement),
      pipelined_(pipelined),
      memory_(layout_.servers()) {}

std::size_t ParameterServerScheme::chunk(DType dtype) const {
  if (!pipelined_) return 0;
  return std::max<std::size_t>(1, options().segment_bytes / dtype_size(dtype));
}

void ParameterServerScheme::allreduce(Comm& comm, Tensor data, ReduceOp op) {
  GRADEX_ENFORCE_EQ(comm.size(), endpoints(), "parameter server group size");
  const int me = comm.rank();
  if (me < workers()) {
    worker_round(comm, layout_, chunk(data.dtype), data, op, memory_);
    return;
  }
  // A dedicated endpoint runs exactly one server.
  const int k = layout_.hosted_on(me).front();
  serve_round(comm, workers(), k, layout_.shard(data.count, k).count,
              chunk(data.dtype), data.dtype, op, memory_);
}

Traffic ParameterServerScheme::expected_traffic(int endpoint, std::size_t count,
                                                DType dtype) const {
  GRADEX_ENFORCE(endpoint >= 0 && endpoint < endpoints(), "endpoint ", endpoint);
  const std::uint64_t elem = dtype_size(dtype);
  const int servers = layout_.servers();
  Traffic t;
  // Worker side: one push out and one pull in per chunk of each non-empty
  // shard whose server runs elsewhere (a shard hosted here is a local copy).
  if (endpoint < workers()) {
    for (int k = 0; k < servers; ++k) {
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

double ParameterServerScheme::model_time(std::size_t bytes, const Topology& topology) const {
  if (bytes == 0) return 0;
  // Every endpoint's pushes leave (or arrive) in one phase and the pulls
  // in the other, so the declared bytes sent or received (f32 counts) are
  // what one port carries in a phase; the busiest port and the slowest
  // worker-server link set its pace. Co-located, a host's sends mix its
  // pushes with its replies, so the model is an upper estimate there.
  const std::size_t count = bytes / dtype_size(DType::f32);
  double busiest = 0;
  for (int e = 0; e < endpoints(); ++e) {
    const Traffic t = expected_traffic(e, count, DType::f32);
    busiest = std::max({busiest, static_cast<double>(t.bytes_sent),
                        static_cast<double>(t.bytes_received)});
  }
  if (busiest == 0) return 0;  // everything is local (one worker hosting every server)
  std::vector<std::pair<int, int>> links;
  for (int w = 0; w < workers(); ++w) {
    for (int k = 0; k < layout_.servers(); ++k) links.emplace_back(w, layout_.host(k));
  }
  // The slowest link carrying `b` bytes through the busiest port.
  const auto phase = [&](double b) {
    double t = 0;
    for (const auto& [w, h] : links) {
      if (w != h) t = std::max(t, message_time(topology.link(w, h), b));
    }
    return t;
  };
  if (!pipelined_) return 2 * phase(busiest);
  // Push and pull overlap: the busiest port's bytes pass once, and the
  // pipeline fills (every worker's first chunk in before any sum goes
  // out) and drains (the last chunk's sums out) by one chunk's share.
  double shard = 0;  // the largest: its chunks are the last to drain
  for (int k = 0; k < layout_.servers(); ++k) {
    shard = std::max(shard, static_cast<double>(layout_.shard(count, k).count));
  }
  const double fill = std::min(1.0, static_cast<double>(chunk(DType::f32)) / shard);
  return phase(busiest) + phase(busiest * fill);
}

}  // namespace gradex
