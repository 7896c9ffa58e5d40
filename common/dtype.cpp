#include "common/dtype.h"

#include <bit>
#include <cmath>
#include <cstring>

#include "common/errors.h"

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

Tensor Tensor::slice(std::size_t offset, std::size_t n) const {
  GRADEX_ENFORCE_LE(offset + n, count, "slice out of range");
  Tensor out{nullptr, n, dtype};
  if (data != nullptr) out.data = static_cast<std::byte*>(data) + offset * dtype_size(dtype);
  return out;
}

// IEEE 754 binary16 from binary32, round to nearest even, with subnormals,
// infinities and NaN handled.
std::uint16_t float_to_half(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN
    return static_cast<std::uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // overflow
  if (abs < 0x38800000u) {  // result is subnormal or zero
    if (abs < 0x33000000u) return static_cast<std::uint16_t>(sign);
    const std::uint32_t mant = (abs & 0x007fffffu) | 0x00800000u;
    const int shift = 126 - static_cast<int>(abs >> 23);  // 14..24
    std::uint32_t half = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1u);
    const std::uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half & 1u))) ++half;
    return static_cast<std::uint16_t>(sign | half);
  }
  std::uint32_t half = ((abs - 0x38000000u) >> 13);
  const std::uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;
  return static_cast<std::uint16_t>(sign | half);
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  std::uint32_t out;
  if (exp == 0) {
    if (mant == 0) {
      out = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      out = sign | (static_cast<std::uint32_t>(112 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {
    out = sign | 0x7f800000u | (mant << 13);
  } else {
    out = sign | ((exp + 112) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(out);
}

std::uint16_t float_to_bf16(float f) {
  std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>(x >> 16);
}

float bf16_to_float(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

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
