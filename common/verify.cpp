#include "common/verify.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

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

void fill_input(Tensor data, int rank) {
  if (data.data == nullptr) return;
  // One period of values, encoded once in the tensor's dtype, then tiled.
  const std::size_t esize = dtype_size(data.dtype);
  std::array<std::byte, kPeriod * 8> period{};
  for (int k = 0; k < kPeriod; ++k) {
    store_element(Tensor{period.data(), kPeriod, data.dtype}, static_cast<std::size_t>(k),
                  input_value(rank, static_cast<std::size_t>(k)));
  }
  auto* out = static_cast<std::byte*>(data.data);
  const std::size_t chunk = kPeriod * esize;
  std::size_t i = 0;
  for (; i + kPeriod <= data.count; i += kPeriod) std::memcpy(out + i * esize, period.data(), chunk);
  std::memcpy(out + i * esize, period.data(), (data.count - i) * esize);
}

std::size_t count_wrong(const Tensor& result, int workers, ReduceOp op) {
  if (result.data == nullptr) return 0;
  // The expected value depends on i only through i mod 13: tabulate it.
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
        expected[k] = result.dtype == DType::i32
                          ? static_cast<double>(static_cast<std::int64_t>(sum) / workers)
                          : sum / workers;
        break;
    }
  }
  const double tol = op == ReduceOp::avg ? tolerance(result.dtype) : 0.0;
  // Exact cases compare bit patterns against the expected period encoded in
  // the dtype (fast); avg compares values within the tolerance.
  const std::size_t esize = dtype_size(result.dtype);
  std::array<std::byte, kPeriod * 8> encoded{};
  const Tensor period{encoded.data(), kPeriod, result.dtype};
  for (int k = 0; k < kPeriod; ++k) store_element(period, static_cast<std::size_t>(k), expected[k]);
  const auto* got = static_cast<const std::byte*>(result.data);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < result.count; ++i) {
    const std::size_t k = i % kPeriod;
    if (std::memcmp(got + i * esize, encoded.data() + k * esize, esize) == 0) continue;
    const double want = expected[k];
    if (!(std::abs(load_element(result, i) - want) <= tol * std::max(1.0, std::abs(want)))) ++wrong;
  }
  return wrong;
}

}  // namespace gradex
