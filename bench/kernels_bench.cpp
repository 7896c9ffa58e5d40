// Memory-bound kernels: a single-thread memcpy (the yardstick the scheme
// benchmarks are compared with) and the reduce kernels for every dtype.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "common/reduce.h"
#include "common/verify.h"

namespace gradex {
namespace {

void BM_Memcpy(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  std::vector<std::byte> src(bytes, std::byte{1}), dst(bytes, std::byte{0});
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(bytes) / 1e9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Memcpy)->Arg(16 << 20)->Arg(64 << 20)->UseRealTime()->Unit(benchmark::kMillisecond);

// dst = dst op src over `bytes`: reads 2 bytes and writes 1 per byte.
void BM_ReduceInto(benchmark::State& state) {
  const auto dtype = static_cast<DType>(state.range(0));
  const auto op = static_cast<ReduceOp>(state.range(1));
  const auto bytes = static_cast<std::size_t>(state.range(2));
  const std::size_t count = bytes / dtype_size(dtype);
  std::vector<std::byte> a(bytes), b(bytes);
  fill_input(Tensor{a.data(), count, dtype}, 0);
  fill_input(Tensor{b.data(), count, dtype}, 1);
  for (auto _ : state) {
    reduce_into(a.data(), b.data(), count, dtype, op);
    benchmark::ClobberMemory();
  }
  state.SetLabel(std::string(dtype_name(dtype)) + "/" + std::string(reduce_op_name(op)));
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(bytes) / 1e9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}

void reduce_args(benchmark::internal::Benchmark* b) {
  for (DType t : kAllDTypes) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::max}) {
      b->Args({static_cast<long>(t), static_cast<long>(op), 16 << 20});
    }
  }
}
BENCHMARK(BM_ReduceInto)->Apply(reduce_args)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gradex
