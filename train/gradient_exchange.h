// What the training loop drives to combine gradients: a GradientExchange.
// SchemeExchange puts any registered Scheme behind it, so the same loop runs
// under ring, tree, halving-doubling, hierarchical and the parameter
// server. Dedicated server endpoints (after the workers) take part in every
// exchange with serve(), given only the collective and its size, as the
// Scheme's collectives expect.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/comm.h"
#include "common/scheme.h"

namespace gradex {

// DDP's communication hooks: gradients travel as 16-bit floats and are
// widened back on arrival, halving the bytes on the wire.
enum class Compression { none, fp16, bf16 };
Compression parse_compression(const std::string& text, const std::string& field = "compression");
std::string compression_name(Compression c);

// One exchange as every endpoint sees it: servers replay these to match the
// workers call for call.
struct ExchangeCall {
  std::size_t count = 0;
  DType dtype = DType::f32;
  ReduceOp op = ReduceOp::sum;
  Collective collective = Collective::all_reduce;
  bool operator==(const ExchangeCall&) const = default;
};

class GradientExchange {
 public:
  virtual ~GradientExchange() = default;
  virtual int workers() const = 0;
  virtual int endpoints() const = 0;
  // On a worker: data ends as op over every worker's data, in place.
  virtual void allreduce(Comm& comm, Tensor data, ReduceOp op) = 0;
  // On a non-worker endpoint: take part in the workers' matching exchange.
  virtual void serve(Comm& comm, const ExchangeCall& call) = 0;
  // On a worker: worker 0's data ends on every worker, S bytes into each
  // (dedicated servers take no part). By default a pipelined ring
  // broadcast over the workers.
  virtual void broadcast(Comm& comm, Tensor data);
  // ZeRO's halves of an all-reduce, where the exchange provides them
  // (common/collective.h): worker r ends with block r of
  // BlockSplit{count, workers} reduced, or contributes block r and ends
  // with every block. The defaults throw.
  virtual bool provides(Collective c) const { return c == Collective::all_reduce; }
  virtual void reduce_scatter(Comm& comm, Tensor data, ReduceOp op);
  virtual void all_gather(Comm& comm, Tensor data);
  // The link traffic `endpoint` must see for one collective `c` of `count`
  // elements of `dtype`, once it has run at that size (auto declares its
  // choice's); nullopt for an exchange that declares none.
  virtual std::optional<Traffic> declared_traffic(Collective /*c*/, int /*endpoint*/,
                                                  std::size_t /*count*/, DType /*dtype*/) const {
    return std::nullopt;
  }
};

class SchemeExchange final : public GradientExchange {
 public:
  explicit SchemeExchange(std::unique_ptr<Scheme> scheme) : scheme_(std::move(scheme)) {}
  int workers() const override { return scheme_->workers(); }
  int endpoints() const override { return scheme_->endpoints(); }
  // Through Scheme::run: each exchange is a collective of its own, launch
  // included.
  void allreduce(Comm& comm, Tensor data, ReduceOp op) override {
    scheme_->run(comm, Collective::all_reduce, data, op);
  }
  void serve(Comm& comm, const ExchangeCall& call) override;
  // The scheme's own broadcast where it provides one and runs it on the
  // workers alone (a dedicated server sits out training's broadcast).
  void broadcast(Comm& comm, Tensor data) override {
    if (scheme_->provides(Collective::broadcast) && scheme_->endpoints() == workers()) {
      return scheme_->run(comm, Collective::broadcast, data, ReduceOp::sum);
    }
    GradientExchange::broadcast(comm, data);
  }
  bool provides(Collective c) const override { return scheme_->provides(c); }
  void reduce_scatter(Comm& comm, Tensor data, ReduceOp op) override {
    scheme_->run(comm, Collective::reduce_scatter, data, op);
  }
  void all_gather(Comm& comm, Tensor data) override {
    scheme_->run(comm, Collective::all_gather, data, ReduceOp::sum);
  }
  std::optional<Traffic> declared_traffic(Collective c, int endpoint, std::size_t count,
                                          DType dtype) const override {
    return scheme_->collective_traffic(c, endpoint, count, dtype);
  }

 private:
  std::unique_ptr<Scheme> scheme_;
};

// Gradient averaging over the workers of one float range, through the
// compression hook: fp16/bf16 divide by the worker count before narrowing
// (PyTorch's fp16_compress_hook order, so the sum cannot overflow) and sum.
// By all-reduce (DDP), or by reduce-scatter (ZeRO-2), which leaves worker
// r's block r of `data` averaged and the rest as they were.
// `gradients` is f32, or phantom (sizes only, on a simulator that carries
// no payloads).
void average_gradients(GradientExchange& exchange, Comm& comm, Tensor gradients,
                       Compression compression, Collective collective,
                       std::vector<std::uint16_t>& scratch);
ExchangeCall average_call(std::size_t count, Compression compression, Collective collective);

// Worker 0's values to every worker (GradientExchange::broadcast).
void broadcast_from_worker0(GradientExchange& exchange, Comm& comm, Tensor data);

}  // namespace gradex
