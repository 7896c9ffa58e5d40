#include "common/verify.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "common/scheme.h"

namespace gradex {

namespace {
constexpr int kPeriod = 13;

double tolerance(DType t) {
  switch (t) {
    case DType::f16: return 1.0 / 1024;
    case DType::bf16: return 1.0 / 128;
    case DType::f32: return 1e-6;
    case DType::f64: return 1e-12;
    case DType::i32: return 0;
  }
  return 0;
}
}  // namespace

double input_value(int rank, std::size_t i) {
  return static_cast<double>((7 * static_cast<std::size_t>(rank) + i) % kPeriod) - 6.0;
}

namespace {

// Element i of `data` is value(first + i): one period of values (value
// depends on its index mod kPeriod), encoded once in the dtype, then tiled.
template <typename Value>
void fill_period(Tensor data, std::size_t first, Value value) {
  if (data.data == nullptr) return;
  const std::size_t esize = dtype_size(data.dtype);
  std::array<std::byte, kPeriod * 8> period{};
  for (int k = 0; k < kPeriod; ++k) {
    store_element(Tensor{period.data(), kPeriod, data.dtype}, static_cast<std::size_t>(k),
                  value(first + static_cast<std::size_t>(k)));
  }
  auto* out = static_cast<std::byte*>(data.data);
  const std::size_t chunk = kPeriod * esize;
  std::size_t i = 0;
  for (; i + kPeriod <= data.count; i += kPeriod) std::memcpy(out + i * esize, period.data(), chunk);
  std::memcpy(out + i * esize, period.data(), (data.count - i) * esize);
}

// Element i of `result` against expected[(first + i) mod kPeriod], within
// `tol` relative (0: exact).
std::size_t count_unlike(const Tensor& result, std::size_t first,
                         const std::array<double, kPeriod>& expected, double tol) {
  if (result.data == nullptr) return 0;
  // Exact cases compare bit patterns against the expected period encoded in
  // the dtype (fast); the others compare values within the tolerance.
  const std::size_t esize = dtype_size(result.dtype);
  std::array<std::byte, kPeriod * 8> encoded{};
  const Tensor period{encoded.data(), kPeriod, result.dtype};
  for (int k = 0; k < kPeriod; ++k) store_element(period, static_cast<std::size_t>(k), expected[k]);
  const auto* got = static_cast<const std::byte*>(result.data);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < result.count; ++i) {
    const std::size_t k = (first + i) % kPeriod;
    if (std::memcmp(got + i * esize, encoded.data() + k * esize, esize) == 0) continue;
    const double want = expected[k];
    if (!(std::abs(load_element(result, i) - want) <= tol * std::max(1.0, std::abs(want)))) ++wrong;
  }
  return wrong;
}

// What no input holds (inputs are in [-6, 6]), exact in every dtype.
constexpr double kMarker = 100;

std::array<double, kPeriod> inputs_of(int rank) {
  std::array<double, kPeriod> v{};
  for (int k = 0; k < kPeriod; ++k) v[k] = input_value(rank, static_cast<std::size_t>(k));
  return v;
}

}  // namespace

void fill_input(Tensor data, int rank) {
  fill_period(data, 0, [rank](std::size_t i) { return input_value(rank, i); });
}

namespace {

// op over the inputs of `workers` ranks, per index mod kPeriod (the
// expected value depends on i only through i mod 13).
std::array<double, kPeriod> reduced_values(int workers, ReduceOp op, DType dtype) {
  std::array<double, kPeriod> expected{};
  for (int k = 0; k < kPeriod; ++k) {
    double sum = 0;
    double lo = std::numeric_limits<double>::infinity();
    double hi = -lo;
    for (int r = 0; r < workers; ++r) {
      const double v = input_value(r, static_cast<std::size_t>(k));
      sum += v;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    switch (op) {
      case ReduceOp::sum: expected[k] = sum; break;
      case ReduceOp::min: expected[k] = lo; break;
      case ReduceOp::max: expected[k] = hi; break;
      case ReduceOp::avg:
        expected[k] = dtype == DType::i32
                          ? static_cast<double>(static_cast<std::int64_t>(sum) / workers)
                          : sum / workers;
        break;
    }
  }
  return expected;
}

// Elements of `result`, which starts at index `first` of the buffer, that
// differ from op over the workers' inputs.
std::size_t count_unreduced(const Tensor& result, std::size_t first, int workers, ReduceOp op) {
  return count_unlike(result, first, reduced_values(workers, op, result.dtype),
                      op == ReduceOp::avg ? tolerance(result.dtype) : 0.0);
}

}  // namespace

std::size_t count_wrong(const Tensor& result, int workers, ReduceOp op) {
  return count_unreduced(result, 0, workers, op);
}

void fill_collective_input(Collective c, Tensor data, int rank, int workers) {
  const BlockSplit split{data.count, static_cast<std::size_t>(workers)};
  const auto mine = static_cast<std::size_t>(rank);
  switch (c) {
    case Collective::all_reduce:
    case Collective::reduce_scatter: return fill_input(data, rank);
    case Collective::all_gather:
      fill_period(data, 0, [](std::size_t) { return kMarker; });
      fill_period(data.slice(split.offset(mine), split.size(mine)), split.offset(mine),
                  [rank](std::size_t i) { return input_value(rank, i); });
      return;
    case Collective::broadcast:
      if (rank == kBroadcastRoot) return fill_input(data, rank);
      fill_period(data, 0, [](std::size_t) { return kMarker; });
      return;
  }
}

std::size_t count_wrong_collective(Collective c, const Tensor& result, int rank, int workers,
                                   ReduceOp op) {
  if (result.data == nullptr) return 0;
  const BlockSplit split{result.count, static_cast<std::size_t>(workers)};
  switch (c) {
    case Collective::all_reduce: return count_wrong(result, workers, op);
    case Collective::reduce_scatter: {
      const auto mine = static_cast<std::size_t>(rank);
      return count_unreduced(result.slice(split.offset(mine), split.size(mine)),
                             split.offset(mine), workers, op);
    }
    case Collective::all_gather: {
      std::size_t wrong = 0;
      for (int b = 0; b < workers; ++b) {
        const auto i = static_cast<std::size_t>(b);
        wrong += count_unlike(result.slice(split.offset(i), split.size(i)), split.offset(i),
                              inputs_of(b), 0.0);
      }
      return wrong;
    }
    case Collective::broadcast: return count_unlike(result, 0, inputs_of(kBroadcastRoot), 0.0);
  }
  return 0;
}

}  // namespace gradex
