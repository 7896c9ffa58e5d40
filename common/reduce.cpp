#include "common/reduce.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "common/device_memory.h"
#include "common/errors.h"

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

void widen_block(DType t, const std::uint16_t* in, float* out, std::size_t n) {
  if (t == DType::f16) {
    half_to_floats({in, n}, {out, n});
  } else {
    bf16_to_floats({in, n}, {out, n});
  }
}

void narrow_block(DType t, const float* in, std::uint16_t* out, std::size_t n) {
  if (t == DType::f16) {
    floats_to_half({in, n}, 1.0f, {out, n});
  } else {
    floats_to_bf16({in, n}, 1.0f, {out, n});
  }
}

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
  if (const DeviceMemoryHooks* device = device_hooks_for(data.data)) {
    return device->finish_reduce(data, op, contributors);
  }
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
    case DType::bf16: {
      // Divided (not multiplied by the reciprocal) in float, one rounding
      // back to the storage type per element.
      auto* p = static_cast<std::uint16_t*>(data.data);
      const float n = static_cast<float>(contributors);
      float block[kBlock];
      for (std::size_t base = 0; base < data.count; base += kBlock) {
        const std::size_t m = std::min(kBlock, data.count - base);
        widen_block(data.dtype, p + base, block, m);
        for (std::size_t i = 0; i < m; ++i) block[i] /= n;
        narrow_block(data.dtype, block, p + base, m);
      }
      return;
    }
  }
}

}  // namespace gradex
