#include "common/reduce.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>

#include "common/errors.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace gradex {

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::avg: return "avg";
    case ReduceOp::min: return "min";
    case ReduceOp::max: return "max";
  }
  GRADEX_ENFORCE(false, "unknown op ", static_cast<int>(op));
}

ReduceOp parse_reduce_op(std::string_view text, const std::string& field) {
  for (ReduceOp op : kAllReduceOps) {
    if (text == reduce_op_name(op)) return op;
  }
  if (text == "prod") {
    throw ConfigError(field, "op 'prod' is not supported (expected sum, avg, min or max)");
  }
  throw ConfigError(field, "unknown op '" + std::string(text) + "' (expected sum, avg, min or max)");
}

ReduceOp combining_op(ReduceOp op) { return op == ReduceOp::avg ? ReduceOp::sum : op; }

namespace {

struct Sum {
  template <typename T>
  static T apply(T a, T b) { return a + b; }
};
struct Min {
  template <typename T>
  static T apply(T a, T b) { return std::min(a, b); }
};
struct Max {
  template <typename T>
  static T apply(T a, T b) { return std::max(a, b); }
};

// Native types: a plain loop the compiler vectorises.
template <typename T, typename Op>
void pair_native(void* out, const void* a, const void* b, std::size_t n) {
  auto* o = static_cast<T*>(out);
  const auto* x = static_cast<const T*>(a);
  const auto* y = static_cast<const T*>(b);
  for (std::size_t i = 0; i < n; ++i) o[i] = Op::apply(x[i], y[i]);
}

template <typename T, typename Op>
void into_native(void* dst, const void* src, std::size_t n) {
  T* __restrict d = static_cast<T*>(dst);
  const T* __restrict s = static_cast<const T*>(src);
  for (std::size_t i = 0; i < n; ++i) d[i] = Op::apply(d[i], s[i]);
}

// 16-bit floats: widen a block to float, combine, narrow (one rounding per
// combination, as a GPU kernel accumulating in the storage type would).
// Blocks keep the float copies in L1 and let each loop vectorise.
constexpr std::size_t kBlock = 512;

// bf16 <-> float without branches (the NaN case is a select), so the
// block loops vectorise; same results as dtype.h's scalar conversions.
inline float widen_bf16(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}
inline std::uint16_t narrow_bf16(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  const std::uint32_t quiet_nan = (x >> 16) | 0x40u;
  const std::uint32_t nan_mask = 0u - static_cast<std::uint32_t>((x & 0x7fffffffu) > 0x7f800000u);
  return static_cast<std::uint16_t>((rounded & ~nan_mask) | (quiet_nan & nan_mask));
}

void widen_block(DType t, const std::uint16_t* in, float* out, std::size_t n);
void narrow_block(DType t, const float* in, std::uint16_t* out, std::size_t n);

template <typename Op>
void pair_16(DType t, void* out, const void* a, const void* b, std::size_t n) {
  auto* o = static_cast<std::uint16_t*>(out);
  const auto* x = static_cast<const std::uint16_t*>(a);
  const auto* y = static_cast<const std::uint16_t*>(b);
  float fx[kBlock], fy[kBlock];
  for (std::size_t base = 0; base < n; base += kBlock) {
    const std::size_t m = std::min(kBlock, n - base);
    widen_block(t, x + base, fx, m);
    widen_block(t, y + base, fy, m);
    for (std::size_t i = 0; i < m; ++i) fx[i] = Op::apply(fx[i], fy[i]);
    narrow_block(t, fx, o + base, m);
  }
}

template <typename Op>
void pair_f16(void* out, const void* a, const void* b, std::size_t n) {
  pair_16<Op>(DType::f16, out, a, b, n);
}
template <typename Op>
void pair_bf16(void* out, const void* a, const void* b, std::size_t n) {
  pair_16<Op>(DType::bf16, out, a, b, n);
}

#if defined(__x86_64__)
// IEEE half conversions in hardware (F16C), chosen at run time so the
// binary still runs on CPUs without it.
__attribute__((target("avx,f16c"))) void widen_f16c(const std::uint16_t* in, float* out,
                                                    std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) out[i] = half_to_float(in[i]);
}

__attribute__((target("avx,f16c"))) void narrow_f16c(const float* in, std::uint16_t* out,
                                                     std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  for (; i < n; ++i) out[i] = float_to_half(in[i]);
}

bool has_f16c() {
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
#endif

void widen_block(DType t, const std::uint16_t* in, float* out, std::size_t n) {
  if (t == DType::bf16) {
    for (std::size_t i = 0; i < n; ++i) out[i] = widen_bf16(in[i]);
    return;
  }
#if defined(__x86_64__)
  if (has_f16c()) return widen_f16c(in, out, n);
#endif
  for (std::size_t i = 0; i < n; ++i) out[i] = half_to_float(in[i]);
}

void narrow_block(DType t, const float* in, std::uint16_t* out, std::size_t n) {
  if (t == DType::bf16) {
    for (std::size_t i = 0; i < n; ++i) out[i] = narrow_bf16(in[i]);
    return;
  }
#if defined(__x86_64__)
  if (has_f16c()) return narrow_f16c(in, out, n);
#endif
  for (std::size_t i = 0; i < n; ++i) out[i] = float_to_half(in[i]);
}

using PairKernel = void (*)(void*, const void*, const void*, std::size_t);
using IntoKernel = void (*)(void*, const void*, std::size_t);

template <typename Op>
PairKernel pair_kernel(DType t) {
  switch (t) {
    case DType::f32: return pair_native<float, Op>;
    case DType::f64: return pair_native<double, Op>;
    case DType::i32: return pair_native<std::int32_t, Op>;
    case DType::f16: return pair_f16<Op>;
    case DType::bf16: return pair_bf16<Op>;
  }
  GRADEX_ENFORCE(false, "unknown dtype");
}

template <typename Op>
IntoKernel into_kernel(DType t) {
  switch (t) {
    case DType::f32: return into_native<float, Op>;
    case DType::f64: return into_native<double, Op>;
    case DType::i32: return into_native<std::int32_t, Op>;
    default: return nullptr;  // 16-bit types go through pair kernels
  }
}

PairKernel select_pair(DType t, ReduceOp op) {
  switch (combining_op(op)) {
    case ReduceOp::sum: return pair_kernel<Sum>(t);
    case ReduceOp::min: return pair_kernel<Min>(t);
    case ReduceOp::max: return pair_kernel<Max>(t);
    case ReduceOp::avg: break;
  }
  GRADEX_ENFORCE(false, "unreachable");
}

IntoKernel select_into(DType t, ReduceOp op) {
  switch (combining_op(op)) {
    case ReduceOp::sum: return into_kernel<Sum>(t);
    case ReduceOp::min: return into_kernel<Min>(t);
    case ReduceOp::max: return into_kernel<Max>(t);
    case ReduceOp::avg: break;
  }
  GRADEX_ENFORCE(false, "unreachable");
}

}  // namespace

void reduce_into(void* dst, const void* src, std::size_t count, DType dtype, ReduceOp op) {
  if (count == 0) return;
  if (IntoKernel k = select_into(dtype, op)) {
    k(dst, src, count);
  } else {
    select_pair(dtype, op)(dst, dst, src, count);
  }
}

void reduce_pair(void* out, const void* a, const void* b, std::size_t count, DType dtype,
                 ReduceOp op) {
  if (count == 0) return;
  select_pair(dtype, op)(out, a, b, count);
}

void finish_reduce(Tensor data, ReduceOp op, int contributors) {
  if (op != ReduceOp::avg || contributors <= 1 || data.count == 0 || data.data == nullptr) return;
  switch (data.dtype) {
    case DType::f32: {
      auto* p = static_cast<float*>(data.data);
      const float inv = 1.0f / static_cast<float>(contributors);
      for (std::size_t i = 0; i < data.count; ++i) p[i] *= inv;
      return;
    }
    case DType::f64: {
      auto* p = static_cast<double*>(data.data);
      const double inv = 1.0 / contributors;
      for (std::size_t i = 0; i < data.count; ++i) p[i] *= inv;
      return;
    }
    case DType::i32: {
      auto* p = static_cast<std::int32_t*>(data.data);
      for (std::size_t i = 0; i < data.count; ++i) p[i] /= contributors;
      return;
    }
    case DType::f16:
    case DType::bf16:
      for (std::size_t i = 0; i < data.count; ++i) {
        store_element(data, i, static_cast<float>(load_element(data, i)) / contributors);
      }
      return;
  }
}

}  // namespace gradex
