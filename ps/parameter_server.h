// Synchronous parameter server (BSP, one round per all-reduce): every
// worker pushes shard k of its gradient to server k, each server combines
// the pushes of its shard and every worker pulls all shards back.
//
// Cost (docs/architecture.md, Cost model): a server's NIC carries W shards in, then W shards out,
// so one server takes 2 (a + W S / B) and k servers 2 (a + W S / (k B)),
// against the ring's 2 (N-1)/N S / B: the bandwidth bottleneck of claims A1-A5 (docs/architecture.md).
// Push then pull is the reading claim A5 assumes. Pipelined
// (BytePS's partitioning), shards move in chunks of segment_bytes and a
// server returns each chunk's sum while the next chunk comes in, so its
// ingress and egress work at once: about a + W S / (k B) plus one chunk.
#pragma once

#include "common/scheme.h"
#include "ps/server.h"
#include "ps/sharding.h"

namespace gradex {

class ParameterServerScheme final : public Scheme {
 public:
  // Uses options.workers, options.servers and options.placement; throws
  // ConfigError if there is not at least one of each.
  // `pipelined`: shards move in chunks of options.segment_bytes.
  // `in_network`: the dedicated servers are a switch's ports that sum
  // (NVLS, SHARP): one per worker, each summing 1/N of the keys, which is
  // how a switch that reduces at line rate on every port behaves.
  explicit ParameterServerScheme(SchemeOptions options, bool pipelined = false,
                                 bool in_network = false);
  ReducingSwitches reducing_switches() const override {
    return in_network_ ? ReducingSwitches::one : ReducingSwitches::none;
  }
  bool segmented() const override { return pipelined_; }

  const ServerLayout& layout() const { return layout_; }
  int endpoints() const override { return layout_.endpoints(); }
  // Workers run the worker role (and any co-located server); dedicated
  // server endpoints, given a phantom tensor, run the server role only.
  void allreduce(Comm& comm, Tensor data, ReduceOp op) override;
  // Reduce-scatter, all-gather and broadcast by the same push, combine or
  // place, and pull (ps/pattern.h): every placement but hybrid.
  bool provides(Collective c) const override;
  void reduce_scatter(Comm& comm, Tensor data, ReduceOp op) override;
  void all_gather(Comm& comm, Tensor data) override;
  void broadcast(Comm& comm, Tensor data) override;
  Traffic expected_traffic(int endpoint, std::size_t count, DType dtype) const override;
  Traffic collective_traffic(Collective c, int endpoint, std::size_t count,
                             DType dtype) const override;
  // Push, then pull, each a + (bytes through the busiest port) / B: with
  // dedicated servers 2 (a + W S / (k B)) (docs/architecture.md, Cost model), and a worker's own
  // NIC when it is the busier (more servers than workers, co-location).
  // Pipelined: the busiest port's bytes once, plus one chunk's share of
  // them to fill and drain the pipeline.
  double model_time(std::size_t bytes, const Topology& topology) const override;
  // The same for every collective, with each port's bytes as the pattern
  // moves them.
  double collective_model_time(Collective c, std::size_t bytes,
                               const Topology& topology) const override;

 private:
  // One round of collective `c` on this endpoint: a worker's, or a
  // dedicated server's.
  void round(Comm& comm, Tensor data, ReduceOp op, Collective c);
  // Chunk size in elements of `dtype` (0: whole shards).
  std::size_t chunk(DType dtype) const;

  ServerLayout layout_;
  bool pipelined_;
  bool in_network_;
  ServerMemory memory_;  // the servers' accumulators, kept between rounds
};

}  // namespace gradex
