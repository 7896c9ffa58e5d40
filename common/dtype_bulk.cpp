// Bulk float <-> fp16/bf16 conversions: the element functions of dtype.cpp
// applied to whole buffers, with the vector units doing the work when the
// CPU has them. Every path gives the scalar functions' bits exactly, so a
// result never depends on the machine it was computed on.
#include <cstddef>

#include "common/dtype.h"
#include "common/errors.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace gradex {
namespace {

void scalar_to_half(const float* in, float scale, std::uint16_t* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = float_to_half(in[i] * scale);
}
void scalar_from_half(const std::uint16_t* in, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = half_to_float(in[i]);
}
void scalar_to_bf16(const float* in, float scale, std::uint16_t* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = float_to_bf16(in[i] * scale);
}
void scalar_from_bf16(const std::uint16_t* in, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = bf16_to_float(in[i]);
}

#if defined(__x86_64__)
// The vector paths are compiled for their instruction sets whatever the
// build's -march and chosen at run time, so a portable binary still uses
// them and a binary built on a newer CPU still runs on an older one.

bool has_avx_f16c() {
  // F16C from CPUID itself: clang does not know "f16c" as a
  // __builtin_cpu_supports feature. "avx" also checks that the OS saves
  // the YMM registers.
  static const bool yes = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __builtin_cpu_supports("avx") && __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 &&
           (ecx & bit_F16C) != 0;
  }();
  return yes;
}

bool has_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
}

__attribute__((target("avx,f16c"))) void f16c_to_half(const float* in, float scale,
                                                      std::uint16_t* out, std::size_t n) {
  const __m256 s = _mm256_set1_ps(scale);
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  const __m256 quiet_nan = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fc00000));
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 x = _mm256_mul_ps(_mm256_loadu_ps(in + i), s);
    // F16C keeps a NaN's top payload bits where float_to_half returns the
    // bare quiet NaN with the sign: make every NaN that one first (it
    // converts to sign | 0x7e00).
    const __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
    x = _mm256_blendv_ps(x, _mm256_or_ps(_mm256_and_ps(x, sign_bit), quiet_nan), nan);
    const __m128i h = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  scalar_to_half(in + i, scale, out + i, n - i);
}

__attribute__((target("avx,f16c"))) void f16c_from_half(const std::uint16_t* in, float* out,
                                                        std::size_t n) {
  const __m128i magnitude = _mm_set1_epi16(0x7fff);
  const __m128i infinity = _mm_set1_epi16(0x7c00);
  const __m128i quiet_bit = _mm_set1_epi16(0x0200);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    // F16C quiets a signalling NaN, half_to_float keeps it signalling. They
    // are rare (no arithmetic produces one): such a group goes to the
    // scalar function.
    const __m128i nan = _mm_cmpgt_epi16(_mm_and_si128(h, magnitude), infinity);
    const __m128i signalling =
        _mm_andnot_si128(_mm_cmpeq_epi16(_mm_and_si128(h, quiet_bit), quiet_bit), nan);
    if (_mm_movemask_epi8(signalling) != 0) {
      scalar_from_half(in + i, out + i, 8);
      continue;
    }
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  scalar_from_half(in + i, out + i, n - i);
}

// float_to_bf16 in 32-bit lanes: round to nearest even by adding 0x7fff
// plus the kept part's lowest bit, except that a NaN keeps its top bits
// with the quiet bit set.
__attribute__((target("avx2"))) void avx2_to_bf16(const float* in, float scale,
                                                 std::uint16_t* out, std::size_t n) {
  const __m256 s = _mm256_set1_ps(scale);
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i round_bias = _mm256_set1_epi32(0x7fff);
  const __m256i magnitude = _mm256_set1_epi32(0x7fffffff);
  const __m256i infinity = _mm256_set1_epi32(0x7f800000);
  const __m256i quiet_bit = _mm256_set1_epi32(0x40);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i x = _mm256_castps_si256(_mm256_mul_ps(_mm256_loadu_ps(in + i), s));
    const __m256i high = _mm256_srli_epi32(x, 16);
    const __m256i lsb = _mm256_and_si256(high, one);
    const __m256i rounded =
        _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(x, round_bias), lsb), 16);
    // The magnitude is at most 0x7fffffff, so the signed compare is exact.
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, magnitude), infinity);
    const __m256i bits = _mm256_blendv_epi8(rounded, _mm256_or_si256(high, quiet_bit), nan);
    // Each lane is below 0x10000, so the saturating pack only narrows.
    const __m128i packed =
        _mm_packus_epi32(_mm256_castsi256_si128(bits), _mm256_extracti128_si256(bits, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), packed);
  }
  scalar_to_bf16(in + i, scale, out + i, n - i);
}

__attribute__((target("avx2"))) void avx2_from_bf16(const std::uint16_t* in, float* out,
                                                   std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    const __m256i wide = _mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16);
    _mm256_storeu_ps(out + i, _mm256_castsi256_ps(wide));
  }
  scalar_from_bf16(in + i, out + i, n - i);
}
#endif

}  // namespace

bool bulk_half_vectorised() {
#if defined(__x86_64__)
  return has_avx_f16c();
#else
  return false;
#endif
}

bool bulk_bf16_vectorised() {
#if defined(__x86_64__)
  return has_avx2();
#else
  return false;
#endif
}

void floats_to_half(std::span<const float> in, float scale, std::span<std::uint16_t> out) {
  GRADEX_ENFORCE_EQ(in.size(), out.size(), "floats_to_half: lengths differ");
#if defined(__x86_64__)
  if (has_avx_f16c()) return f16c_to_half(in.data(), scale, out.data(), in.size());
#endif
  scalar_to_half(in.data(), scale, out.data(), in.size());
}

void half_to_floats(std::span<const std::uint16_t> in, std::span<float> out) {
  GRADEX_ENFORCE_EQ(in.size(), out.size(), "half_to_floats: lengths differ");
#if defined(__x86_64__)
  if (has_avx_f16c()) return f16c_from_half(in.data(), out.data(), in.size());
#endif
  scalar_from_half(in.data(), out.data(), in.size());
}

void floats_to_bf16(std::span<const float> in, float scale, std::span<std::uint16_t> out) {
  GRADEX_ENFORCE_EQ(in.size(), out.size(), "floats_to_bf16: lengths differ");
#if defined(__x86_64__)
  if (has_avx2()) return avx2_to_bf16(in.data(), scale, out.data(), in.size());
#endif
  scalar_to_bf16(in.data(), scale, out.data(), in.size());
}

void bf16_to_floats(std::span<const std::uint16_t> in, std::span<float> out) {
  GRADEX_ENFORCE_EQ(in.size(), out.size(), "bf16_to_floats: lengths differ");
#if defined(__x86_64__)
  if (has_avx2()) return avx2_from_bf16(in.data(), out.data(), in.size());
#endif
  scalar_from_bf16(in.data(), out.data(), in.size());
}

}  // namespace gradex
