// Element types and the typed view of a buffer that schemes operate on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gradex {

enum class DType { f32, f64, f16, bf16, i32 };

std::size_t dtype_size(DType t);
// Canonical name ("f32", "bf16", ...) and the nccl-tests spelling for tables.
std::string_view dtype_name(DType t);
std::string_view dtype_table_name(DType t);
// Accepts the canonical names and common aliases ("float", "half", "int32").
// Throws ConfigError naming `field` on anything else.
DType parse_dtype(std::string_view text, const std::string& field = "dtype");
inline constexpr DType kAllDTypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16,
                                       DType::i32};

// A typed, non-owning view: `count` elements of `dtype` at `data`. A null
// `data` with a non-zero count is a phantom buffer (size only), used where
// bytes are accounted but never touched.
struct Tensor {
  void* data = nullptr;
  std::size_t count = 0;
  DType dtype = DType::f32;

  std::size_t bytes() const { return count * dtype_size(dtype); }
  bool phantom() const { return data == nullptr && count != 0; }
  // Elements [offset, offset + n) of this view.
  Tensor slice(std::size_t offset, std::size_t n) const;
};

// Element conversions for the 16-bit types (round to nearest even).
std::uint16_t float_to_half(float f);
float half_to_float(std::uint16_t h);
std::uint16_t float_to_bf16(float f);
float bf16_to_float(std::uint16_t b);

// Reads/writes element i of a tensor as a double (tests, checks, init).
double load_element(const Tensor& t, std::size_t i);
void store_element(const Tensor& t, std::size_t i, double value);

}  // namespace gradex
