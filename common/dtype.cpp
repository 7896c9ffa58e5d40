#include "common/dtype.h"

#include <cmath>
#include <cstring>

#include "common/errors.h"
#include "common/half_bits.h"

namespace gradex {

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::i32: return 4;
  }
  GRADEX_ENFORCE(false, "unknown dtype ", static_cast<int>(t));
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::i32: return "i32";
  }
  GRADEX_ENFORCE(false, "unknown dtype ", static_cast<int>(t));
}

std::string_view dtype_table_name(DType t) {
  switch (t) {
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::f16: return "half";
    case DType::bf16: return "bfloat16";
    case DType::i32: return "int32";
  }
  GRADEX_ENFORCE(false, "unknown dtype ", static_cast<int>(t));
}

DType parse_dtype(std::string_view text, const std::string& field) {
  for (DType t : kAllDTypes) {
    if (text == dtype_name(t) || text == dtype_table_name(t)) return t;
  }
  if (text == "float32") return DType::f32;
  if (text == "float64") return DType::f64;
  if (text == "float16") return DType::f16;
  throw ConfigError(field, "unknown dtype '" + std::string(text) +
                               "' (expected one of f32, f64, f16, bf16, i32)");
}

void Tensor::slice_out_of_range(std::size_t offset, std::size_t n) const {
  GRADEX_ENFORCE_LE(offset + n, count, "slice out of range");
  throw InvariantError("unreachable: slice_out_of_range on a slice in range");
}

// One definition for the host and the CUDA kernels (common/half_bits.h).
std::uint16_t float_to_half(float f) { return bits::float_to_half(f); }
float half_to_float(std::uint16_t h) { return bits::half_to_float(h); }
std::uint16_t float_to_bf16(float f) { return bits::float_to_bf16(f); }
float bf16_to_float(std::uint16_t b) { return bits::bf16_to_float(b); }

double load_element(const Tensor& t, std::size_t i) {
  GRADEX_ENFORCE(t.data != nullptr && i < t.count, "load_element out of range");
  const auto* p = static_cast<const std::byte*>(t.data) + i * dtype_size(t.dtype);
  switch (t.dtype) {
    case DType::f32: { float v; std::memcpy(&v, p, 4); return v; }
    case DType::f64: { double v; std::memcpy(&v, p, 8); return v; }
    case DType::f16: { std::uint16_t v; std::memcpy(&v, p, 2); return half_to_float(v); }
    case DType::bf16: { std::uint16_t v; std::memcpy(&v, p, 2); return bf16_to_float(v); }
    case DType::i32: { std::int32_t v; std::memcpy(&v, p, 4); return v; }
  }
  GRADEX_ENFORCE(false, "unknown dtype");
}

void store_element(const Tensor& t, std::size_t i, double value) {
  GRADEX_ENFORCE(t.data != nullptr && i < t.count, "store_element out of range");
  auto* p = static_cast<std::byte*>(t.data) + i * dtype_size(t.dtype);
  switch (t.dtype) {
    case DType::f32: { float v = static_cast<float>(value); std::memcpy(p, &v, 4); return; }
    case DType::f64: { std::memcpy(p, &value, 8); return; }
    case DType::f16: { auto v = float_to_half(static_cast<float>(value)); std::memcpy(p, &v, 2); return; }
    case DType::bf16: { auto v = float_to_bf16(static_cast<float>(value)); std::memcpy(p, &v, 2); return; }
    case DType::i32: { auto v = static_cast<std::int32_t>(std::llround(value)); std::memcpy(p, &v, 4); return; }
  }
  GRADEX_ENFORCE(false, "unknown dtype");
}

}  // namespace gradex
