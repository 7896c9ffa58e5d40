// The fp16/bf16 gradient compression's conversions: the element loop that
// average_gradients used to run (scalar functions of common/dtype.h)
// against the bulk functions, narrowing with the 1/N scale and widening
// back, over the default MLP's 269,322 gradients and a 16 MiB buffer.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/dtype.h"

namespace gradex {
namespace {

enum Format : long { kHalf, kBf16 };
enum Direction : long { kNarrow, kWiden };
enum Path : long { kScalarLoop, kBulk };

void BM_Convert(benchmark::State& state) {
  const auto format = static_cast<Format>(state.range(0));
  const auto direction = static_cast<Direction>(state.range(1));
  const auto path = static_cast<Path>(state.range(2));
  const auto count = static_cast<std::size_t>(state.range(3));
  const float scale = 0.25f;  // 1/N for four workers
  std::vector<float> floats(count);
  for (std::size_t i = 0; i < count; ++i) {
    floats[i] = static_cast<float>(i % 1999) * 1e-3f - 1.0f;  // gradient-sized values
  }
  std::vector<std::uint16_t> packed(count);
  floats_to_half(floats, 1.0f, packed);
  if (format == kBf16) floats_to_bf16(floats, 1.0f, packed);
  const bool half = format == kHalf;
  for (auto _ : state) {
    if (direction == kNarrow && path == kScalarLoop) {
      for (std::size_t i = 0; i < count; ++i) {
        packed[i] = half ? float_to_half(floats[i] * scale) : float_to_bf16(floats[i] * scale);
      }
    } else if (direction == kNarrow) {
      if (half) {
        floats_to_half(floats, scale, packed);
      } else {
        floats_to_bf16(floats, scale, packed);
      }
    } else if (path == kScalarLoop) {
      for (std::size_t i = 0; i < count; ++i) {
        floats[i] = half ? half_to_float(packed[i]) : bf16_to_float(packed[i]);
      }
    } else if (half) {
      half_to_floats(packed, floats);
    } else {
      bf16_to_floats(packed, floats);
    }
    benchmark::DoNotOptimize(floats.data());
    benchmark::DoNotOptimize(packed.data());
    benchmark::ClobberMemory();
  }
  const bool vectorised = half ? bulk_half_vectorised() : bulk_bf16_vectorised();
  std::string label = half ? "f16" : "bf16";
  label.append(direction == kNarrow ? " narrow" : " widen");
  label.append(path == kScalarLoop ? " scalar-loop" : (vectorised ? " bulk-simd" : " bulk-scalar"));
  state.SetLabel(label);
  // Elements per second: both directions touch 6 bytes per element.
  state.counters["Gelem/s"] = benchmark::Counter(static_cast<double>(count) / 1e9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

void convert_args(benchmark::internal::Benchmark* b) {
  for (long count : {269322L, 4L << 20}) {
    for (long format : {kHalf, kBf16}) {
      for (long direction : {kNarrow, kWiden}) {
        for (long path : {kScalarLoop, kBulk}) b->Args({format, direction, path, count});
      }
    }
  }
}
BENCHMARK(BM_Convert)->Apply(convert_args)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace gradex
