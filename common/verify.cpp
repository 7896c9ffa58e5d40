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
constexpr int kPeriod = kVerifyPeriod;

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

// The span's values encoded in the dtype, one period.
std::array<std::byte, kPeriod * 8> encode_period(const PeriodicSpan& span, DType dtype) {
  std::array<std::byte, kPeriod * 8> period{};
  for (int k = 0; k < kPeriod; ++k) {
    store_element(Tensor{period.data(), kPeriod, dtype}, static_cast<std::size_t>(k),
                  span.values[static_cast<std::size_t>(k)]);
  }
  return period;
}

// Element i of the span is values[(first + i) mod kPeriod]: one period,
// encoded once in the dtype, then tiled from the right phase.
void fill_span(Tensor data, const PeriodicSpan& span) {
  if (data.data == nullptr) return;
  const Tensor part = data.slice(span.offset, span.count);
  const std::size_t esize = dtype_size(data.dtype);
  const auto period = encode_period(span, data.dtype);
  auto* out = static_cast<std::byte*>(part.data);
  for (std::size_t i = 0; i < part.count; ++i) {
    const std::size_t k = (span.first + i) % kPeriod;
    if (k == 0 && i + kPeriod <= part.count) {  // whole periods at once
      const std::size_t whole = (part.count - i) / kPeriod * kPeriod;
      for (std::size_t j = 0; j < whole; j += kPeriod) {
        std::memcpy(out + (i + j) * esize, period.data(), kPeriod * esize);
      }
      i += whole - 1;
      continue;
    }
    std::memcpy(out + i * esize, period.data() + k * esize, esize);
  }
}

// Elements of the span that differ from their value by more than its
// tolerance. Exact matches compare bit patterns against the encoded
// period (fast); the others compare values.
std::size_t count_span_wrong(const Tensor& result, const PeriodicSpan& span) {
  if (result.data == nullptr) return 0;
  const Tensor part = result.slice(span.offset, span.count);
  const std::size_t esize = dtype_size(result.dtype);
  const auto encoded = encode_period(span, result.dtype);
  const auto* got = static_cast<const std::byte*>(part.data);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < part.count; ++i) {
    const std::size_t k = (span.first + i) % kPeriod;
    if (std::memcmp(got + i * esize, encoded.data() + k * esize, esize) == 0) continue;
    const double want = span.values[k];
    if (!(std::abs(load_element(part, i) - want) <= span.tolerance * std::max(1.0, std::abs(want)))) {
      ++wrong;
    }
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

std::array<double, kPeriod> markers() {
  std::array<double, kPeriod> v{};
  v.fill(kMarker);
  return v;
}

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

// Block b of the workers' BlockSplit as a span starting at its own index.
PeriodicSpan block_span(std::size_t count, int workers, int b,
                        const std::array<double, kPeriod>& values, double tol = 0) {
  const BlockSplit split{count, static_cast<std::size_t>(workers)};
  const auto i = static_cast<std::size_t>(b);
  return {split.offset(i), split.size(i), split.offset(i), values, tol};
}

PeriodicSpan whole_span(std::size_t count, const std::array<double, kPeriod>& values,
                        double tol = 0) {
  return {0, count, 0, values, tol};
}

}  // namespace

std::vector<PeriodicSpan> collective_fill_spans(Collective c, std::size_t count, int rank,
                                                int workers) {
  switch (c) {
    case Collective::all_reduce:
    case Collective::reduce_scatter: return {whole_span(count, inputs_of(rank))};
    case Collective::all_gather:
      return {whole_span(count, markers()), block_span(count, workers, rank, inputs_of(rank))};
    case Collective::broadcast:
      return {whole_span(count, rank == kBroadcastRoot ? inputs_of(rank) : markers())};
  }
  return {};
}

std::vector<PeriodicSpan> collective_check_spans(Collective c, std::size_t count, DType dtype,
                                                 int rank, int workers, ReduceOp op) {
  const double tol = op == ReduceOp::avg ? tolerance(dtype) : 0.0;
  switch (c) {
    case Collective::all_reduce:
      return {whole_span(count, reduced_values(workers, op, dtype), tol)};
    case Collective::reduce_scatter:
      return {block_span(count, workers, rank, reduced_values(workers, op, dtype), tol)};
    case Collective::all_gather: {
      std::vector<PeriodicSpan> spans;
      for (int b = 0; b < workers; ++b) spans.push_back(block_span(count, workers, b, inputs_of(b)));
      return spans;
    }
    case Collective::broadcast: return {whole_span(count, inputs_of(kBroadcastRoot))};
  }
  return {};
}

void fill_input(Tensor data, int rank) {
  fill_collective_input(Collective::all_reduce, data, rank, 1);
}

std::size_t count_wrong(const Tensor& result, int workers, ReduceOp op) {
  return count_wrong_collective(Collective::all_reduce, result, 0, workers, op);
}

void fill_collective_input(Collective c, Tensor data, int rank, int workers) {
  for (const PeriodicSpan& span : collective_fill_spans(c, data.count, rank, workers)) {
    fill_span(data, span);
  }
}

std::size_t count_wrong_collective(Collective c, const Tensor& result, int rank, int workers,
                                   ReduceOp op) {
  if (result.data == nullptr) return 0;
  std::size_t wrong = 0;
  for (const PeriodicSpan& span :
       collective_check_spans(c, result.count, result.dtype, rank, workers, op)) {
    wrong += count_span_wrong(result, span);
  }
  return wrong;
}

}  // namespace gradex
