#include "train/gradient_exchange.h"

#include <algorithm>

#include "allreduce/ring.h"
#include "common/errors.h"

namespace gradex {

Compression parse_compression(const std::string& text, const std::string& field) {
  if (text == "none") return Compression::none;
  if (text == "fp16" || text == "f16") return Compression::fp16;
  if (text == "bf16") return Compression::bf16;
  throw ConfigError(field, "unknown compression '" + text + "' (known: none, fp16, bf16)");
}

std::string compression_name(Compression c) {
  switch (c) {
    case Compression::none: return "none";
    case Compression::fp16: return "fp16";
    case Compression::bf16: return "bf16";
  }
  return "?";
}

ExchangeCall average_call(std::size_t count, Compression compression, Collective collective) {
  GRADEX_ENFORCE(collective == Collective::all_reduce || collective == Collective::reduce_scatter,
                 "gradients are averaged by all-reduce or reduce-scatter, not ",
                 collective_name(collective));
  switch (compression) {
    case Compression::none: return {count, DType::f32, ReduceOp::avg, collective};
    case Compression::fp16: return {count, DType::f16, ReduceOp::sum, collective};
    case Compression::bf16: return {count, DType::bf16, ReduceOp::sum, collective};
  }
  return {};
}

void average_gradients(GradientExchange& exchange, Comm& comm, Tensor gradients,
                       Compression compression, Collective collective,
                       std::vector<std::uint16_t>& scratch) {
  GRADEX_ENFORCE(gradients.dtype == DType::f32, "gradients are f32");
  const ExchangeCall call = average_call(gradients.count, compression, collective);
  const auto run = [&](Tensor t) {
    if (collective == Collective::reduce_scatter) {
      exchange.reduce_scatter(comm, t, call.op);
    } else {
      exchange.allreduce(comm, t, call.op);
    }
  };
  if (compression == Compression::none) {
    run(gradients);
    return;
  }
  if (gradients.phantom()) {  // sizes only: nothing to narrow or widen
    run(Tensor{nullptr, gradients.count, call.dtype});
    return;
  }
  const std::span<float> data(static_cast<float*>(gradients.data), gradients.count);
  // Scaled by 1/N in the same pass as the narrowing: the compressed sum of
  // the N shares is then the average, and no float pass is spent on it.
  const float inv = 1.0f / static_cast<float>(exchange.workers());
  const bool half = compression == Compression::fp16;
  scratch.resize(data.size());
  if (half) {
    floats_to_half(data, inv, scratch);
  } else {
    floats_to_bf16(data, inv, scratch);
  }
  run(Tensor{scratch.data(), data.size(), call.dtype});
  // Reduce-scattered, only this worker's block is reduced: widen that.
  std::size_t first = 0, count = data.size();
  if (collective == Collective::reduce_scatter) {
    const BlockSplit blocks{data.size(), static_cast<std::size_t>(exchange.workers())};
    const auto mine = static_cast<std::size_t>(comm.rank());
    first = blocks.offset(mine);
    count = blocks.size(mine);
  }
  const std::span<const std::uint16_t> reduced(scratch.data() + first, count);
  if (half) {
    half_to_floats(reduced, data.subspan(first, count));
  } else {
    bf16_to_floats(reduced, data.subspan(first, count));
  }
}

void GradientExchange::reduce_scatter(Comm&, Tensor, ReduceOp) {
  throw InvariantError("this exchange provides no reduce_scatter");
}

void GradientExchange::all_gather(Comm&, Tensor) {
  throw InvariantError("this exchange provides no all_gather");
}

void GradientExchange::broadcast(Comm& comm, Tensor data) {
  ring_broadcast(comm, data, kBroadcastRoot, SchemeOptions{}.segment_bytes, /*tag=*/2, workers());
}

void broadcast_from_worker0(GradientExchange& exchange, Comm& comm, Tensor data) {
  exchange.broadcast(comm, data);
}

void SchemeExchange::serve(Comm& comm, const ExchangeCall& call) {
  scheme_->run(comm, call.collective, Tensor{nullptr, call.count, call.dtype}, call.op);
}

}  // namespace gradex
