// Synchronous parameter server (BSP, one round per all-reduce): every
// worker pushes shard k of its gradient to server k, each server combines
// the pushes of its shard and every worker pulls all shards back.
//
// Cost (DESIGN.md): a server's NIC carries W shards in, then W shards out,
// so one server takes 2 (a + W S / B) and k servers 2 (a + W S / (k B)),
// against the ring's 2 (N-1)/N S / B: the bottleneck document 004 describes.
// Push and pull are not pipelined into each other, so the measured time is
// that model's; cutting shards into segments would overlap the server's
// ingress and egress and make a different scheme.
#pragma once

#include "common/scheme.h"
#include "ps/server.h"
#include "ps/sharding.h"

namespace gradex {

class ParameterServerScheme final : public Scheme {
 public:
  // Uses options.workers, options.servers and options.placement; throws
  // ConfigError if there is not at least one of each.
  explicit ParameterServerScheme(SchemeOptions options);

  const ServerLayout& layout() const { return layout_; }
  int endpoints() const override { return layout_.endpoints(); }
  // Workers run the worker role (and any co-located server); dedicated
  // server endpoints, given a phantom tensor, run the server role only.
  void allreduce(Comm& comm, Tensor data, ReduceOp op) override;
  Traffic expected_traffic(int endpoint, std::size_t count, DType dtype) const override;
  // Push, then pull, each a + (bytes through the busiest port) / B: with
  // dedicated servers 2 (a + W S / (k B)) (DESIGN.md), and a worker's own
  // NIC when it is the busier (more servers than workers, co-location).
  double model_time(std::size_t bytes, const Topology& topology) const override;

 private:
  ServerLayout layout_;
  ServerMemory memory_;  // the servers' accumulators, kept between rounds
};

}  // namespace gradex
