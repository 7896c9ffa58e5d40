#include "common/verify.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
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
  switch (data.dtype) {
    case DType::f32: {  // the common case, without per-element dispatch
      auto* p = static_cast<float*>(data.data);
      for (std::size_t i = 0; i < data.count; ++i) p[i] = static_cast<float>(input_value(rank, i));
      return;
    }
    default:
      for (std::size_t i = 0; i < data.count; ++i) store_element(data, i, input_value(rank, i));
  }
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
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < result.count; ++i) {
    const double want = expected[i % kPeriod];
    const double got = load_element(result, i);
    if (!(std::abs(got - want) <= tol * std::max(1.0, std::abs(want)))) ++wrong;
  }
  return wrong;
}

}  // namespace gradex
