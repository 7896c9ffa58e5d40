// Element types and the typed view of a buffer that schemes operate on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
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
  // Elements [offset, offset + n) of this view. Inline: schemes slice at
  // every step, and a call returns its view through memory.
  Tensor slice(std::size_t offset, std::size_t n) const {
    if (offset + n > count) slice_out_of_range(offset, n);
    return {data == nullptr ? nullptr : static_cast<std::byte*>(data) + offset * dtype_size(dtype),
            n, dtype};
  }

 private:
  [[noreturn]] void slice_out_of_range(std::size_t offset, std::size_t n) const;
};

// Element conversions for the 16-bit types (round to nearest even).
std::uint16_t float_to_half(float f);
float half_to_float(std::uint16_t h);
std::uint16_t float_to_bf16(float f);
float bf16_to_float(std::uint16_t b);

// Bulk conversions (common/dtype_bulk.cpp), bit for bit the scalar functions
// above applied element by element: out[i] = float_to_half(in[i] * scale)
// and so on. The narrowing side takes a scale so that averaging (multiplying
// by 1/N) happens in the same pass as the conversion. They use F16C (fp16)
// and AVX2 (bf16) when the CPU has them, whatever the build's target, and
// fall back to the scalar loop otherwise. `out` must be as long as `in`.
void floats_to_half(std::span<const float> in, float scale, std::span<std::uint16_t> out);
void half_to_floats(std::span<const std::uint16_t> in, std::span<float> out);
void floats_to_bf16(std::span<const float> in, float scale, std::span<std::uint16_t> out);
void bf16_to_floats(std::span<const std::uint16_t> in, std::span<float> out);
// Whether the bulk conversions above take their vector paths on this CPU
// (for benchmark labels and tests that say what they covered).
bool bulk_half_vectorised();
bool bulk_bf16_vectorised();

// Reads/writes element i of a tensor as a double (tests, checks, init).
double load_element(const Tensor& t, std::size_t i);
void store_element(const Tensor& t, std::size_t i, double value);

}  // namespace gradex
