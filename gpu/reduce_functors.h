// The element-wise arithmetic of the CUDA reduce kernels, as functors that
// nvcc compiles for the device and the host compiler for the host, so that
// the host tests (tests/gpu_functors_test.cpp) check against the CPU
// kernels (common/reduce.cpp) exactly what a GPU computes:
//   f32, f64, i32  combined in their own type;
//   f16, bf16      widened to float, combined, narrowed with one rounding
//                  to nearest even (common/half_bits.h), as the CPU does;
//   min, max       std::min's and std::max's rule (the first argument on
//                  ties and whenever a comparison with NaN is false), not
//                  fminf/fmaxf, which drop NaNs;
//   avg            combined as a sum and divided once at the end (Finish),
//                  f32 and f64 by multiplying by 1/n, i32 truncating, the
//                  16-bit types dividing in float.
#pragma once

#include <cstdint>

#include "common/dtype.h"
#include "common/half_bits.h"
#include "common/reduce.h"

namespace gradex::gpu {

// How each dtype is stored: the 16-bit floats as their bit patterns.
template <DType D> struct Storage;
template <> struct Storage<DType::f32> { using type = float; };
template <> struct Storage<DType::f64> { using type = double; };
template <> struct Storage<DType::i32> { using type = std::int32_t; };
template <> struct Storage<DType::f16> { using type = std::uint16_t; };
template <> struct Storage<DType::bf16> { using type = std::uint16_t; };
template <DType D> using StorageT = typename Storage<D>::type;

// The type arithmetic happens in, and the conversions to and from storage.
template <DType D> struct Arith {
  using type = StorageT<D>;
  GRADEX_HD static type widen(type v) { return v; }
  GRADEX_HD static type narrow(type v) { return v; }
};
template <> struct Arith<DType::f16> {
  using type = float;
  GRADEX_HD static float widen(std::uint16_t v) { return bits::half_to_float(v); }
  GRADEX_HD static std::uint16_t narrow(float v) { return bits::float_to_half(v); }
};
template <> struct Arith<DType::bf16> {
  using type = float;
  GRADEX_HD static float widen(std::uint16_t v) { return bits::bf16_to_float(v); }
  GRADEX_HD static std::uint16_t narrow(float v) { return bits::float_to_bf16(v); }
};

struct SumOp {
  template <typename T> GRADEX_HD static T apply(T a, T b) { return a + b; }
};
struct MinOp {
  template <typename T> GRADEX_HD static T apply(T a, T b) { return b < a ? b : a; }
};
struct MaxOp {
  template <typename T> GRADEX_HD static T apply(T a, T b) { return a < b ? b : a; }
};

// a (op) b for one element of dtype D.
template <DType D, typename Op> struct Combine {
  GRADEX_HD StorageT<D> operator()(StorageT<D> a, StorageT<D> b) const {
    using A = Arith<D>;
    return A::narrow(Op::apply(A::widen(a), A::widen(b)));
  }
};

// avg's final step over `n` contributors (n > 1).
template <DType D> struct Finish {
  int n;
  GRADEX_HD StorageT<D> operator()(StorageT<D> v) const {
    if constexpr (D == DType::f32) {
      return v * (1.0f / static_cast<float>(n));
    } else if constexpr (D == DType::f64) {
      return v * (1.0 / n);
    } else if constexpr (D == DType::i32) {
      return v / n;
    } else {
      return Arith<D>::narrow(Arith<D>::widen(v) / static_cast<float>(n));
    }
  }
};

// Element i of a buffer as a double, for the check kernels' tolerance.
template <DType D> GRADEX_HD double load_as_double(StorageT<D> v) {
  return static_cast<double>(Arith<D>::widen(v));
}

// Calls f.template operator()<D, Op>() for the combining op of `op`: the
// one run-time switch both the host tests and the kernel launchers use.
template <DType D, typename F> void with_op(ReduceOp op, F&& f) {
  switch (combining_op(op)) {
    case ReduceOp::min: return f.template operator()<D, MinOp>();
    case ReduceOp::max: return f.template operator()<D, MaxOp>();
    default: return f.template operator()<D, SumOp>();
  }
}
template <typename F> void with_dtype(DType t, F&& f) {
  switch (t) {
    case DType::f32: return f.template operator()<DType::f32>();
    case DType::f64: return f.template operator()<DType::f64>();
    case DType::f16: return f.template operator()<DType::f16>();
    case DType::bf16: return f.template operator()<DType::bf16>();
    case DType::i32: return f.template operator()<DType::i32>();
  }
}

}  // namespace gradex::gpu
