// The CUDA kernels' element-wise arithmetic (gpu/reduce_functors.h), run
// on the host against the CPU kernels (common/reduce.cpp) for every dtype
// and op: the same results bit for bit, including the 16-bit types'
// rounding, infinities, overflow to infinity, subnormals and NaN
// (compared as NaN: a GPU's float arithmetic returns its canonical NaN
// where x86 keeps an operand's). Needs no GPU and no CUDA build.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "common/reduce.h"
#include "gpu/reduce_functors.h"

namespace gradex {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// Both operands' values: random ones, then pairs that reach the edges
// (every edge value against every other, so that min/max meet NaN first
// and second, and sums overflow the 16-bit types).
std::vector<double> edge_values(DType t) {
  if (t == DType::i32) return {0, 1, -1, 7, -7, 1 << 20, -(1 << 20), 2147483, -2147483};
  return {0.0,      -0.0,   1.0,     -1.0,  0.1,   1.0 / 3,  65504, -65504, 60000,
          3.0e38,   -3.0e38, 1e-6,   -1e-7, 1e-40, 6.1e-5, kInf,   -kInf,  kNan,
          -kNan,    2.5,    1.00390625};
}

struct Operands {
  std::vector<std::byte> a, b;
  std::size_t count = 0;
};

Operands make_operands(DType t) {
  std::vector<double> x, y;
  const std::vector<double> edge = edge_values(t);
  for (double u : edge) {
    for (double v : edge) {
      x.push_back(u);
      y.push_back(v);
    }
  }
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> real(-1000, 1000);
  for (int i = 0; i < 1000; ++i) {
    x.push_back(t == DType::i32 ? std::round(real(rng)) : real(rng));
    y.push_back(t == DType::i32 ? std::round(real(rng)) : real(rng));
  }
  Operands o;
  o.count = x.size();
  o.a.resize(o.count * dtype_size(t));
  o.b.resize(o.count * dtype_size(t));
  for (std::size_t i = 0; i < o.count; ++i) {
    store_element(Tensor{o.a.data(), o.count, t}, i, x[i]);
    store_element(Tensor{o.b.data(), o.count, t}, i, y[i]);
  }
  return o;
}

// Element i of two buffers agree: the same bits, or both NaN.
template <DType D>
void expect_same(const std::vector<std::byte>& want, const std::vector<std::byte>& got,
                 std::size_t count, const std::string& what) {
  using T = gpu::StorageT<D>;
  for (std::size_t i = 0; i < count; ++i) {
    T w, g;
    std::memcpy(&w, want.data() + i * sizeof(T), sizeof(T));
    std::memcpy(&g, got.data() + i * sizeof(T), sizeof(T));
    if (std::memcmp(&w, &g, sizeof(T)) == 0) continue;
    const Tensor wt{const_cast<std::byte*>(want.data()), count, D};
    const Tensor gt{const_cast<std::byte*>(got.data()), count, D};
    const double wv = load_element(wt, i), gv = load_element(gt, i);
    if (std::isnan(wv) && std::isnan(gv)) continue;
    ADD_FAILURE() << what << " element " << i << ": CPU " << wv << ", functor " << gv;
    return;
  }
}

// The functors over whole buffers, as the kernels apply them.
struct FunctorCase {
  ReduceOp op;
  std::string name;
  template <DType D, typename Op>
  void operator()() const {
    using T = gpu::StorageT<D>;
    const Operands o = make_operands(D);
    std::vector<std::byte> cpu = o.a;
    reduce_into(cpu.data(), o.b.data(), o.count, D, op);
    std::vector<std::byte> dev = o.a;
    for (std::size_t i = 0; i < o.count; ++i) {
      T x, y;
      std::memcpy(&x, dev.data() + i * sizeof(T), sizeof(T));
      std::memcpy(&y, o.b.data() + i * sizeof(T), sizeof(T));
      const T z = gpu::Combine<D, Op>{}(x, y);
      std::memcpy(dev.data() + i * sizeof(T), &z, sizeof(T));
    }
    expect_same<D>(cpu, dev, o.count, name + " combine");
    if (op != ReduceOp::avg) return;
    for (int n : {2, 3, 7}) {
      std::vector<std::byte> cpu_avg = cpu, dev_avg = dev;
      finish_reduce(Tensor{cpu_avg.data(), o.count, D}, op, n);
      for (std::size_t i = 0; i < o.count; ++i) {
        T v;
        std::memcpy(&v, dev_avg.data() + i * sizeof(T), sizeof(T));
        v = gpu::Finish<D>{n}(v);
        std::memcpy(dev_avg.data() + i * sizeof(T), &v, sizeof(T));
      }
      expect_same<D>(cpu_avg, dev_avg, o.count, name + " finish over " + std::to_string(n));
    }
  }
};

TEST(GpuFunctors, MatchTheCpuKernelsForEveryDtypeAndOp) {
  for (DType t : kAllDTypes) {
    for (ReduceOp op : kAllReduceOps) {
      const std::string name = std::string(dtype_name(t)) + " " + std::string(reduce_op_name(op));
      gpu::with_dtype(t, [&]<DType D>() { gpu::with_op<D>(op, FunctorCase{op, name}); });
    }
  }
}

// The edges the CPU path defines, spelled out once so that a change to
// either side is caught with its meaning: 16-bit sums that overflow become
// infinities, min and max keep the first argument when a comparison with
// NaN is false, and f16 rounds ties to even.
TEST(GpuFunctors, SpellOutTheEdgeCases) {
  using H = gpu::Combine<DType::f16, gpu::SumOp>;
  const std::uint16_t big = float_to_half(60000.0f);
  EXPECT_EQ(H{}(big, big), 0x7c00);  // +inf
  // 2049 is halfway between f16's 2048 and 2050: ties to even, 2048.
  EXPECT_EQ(half_to_float(H{}(float_to_half(2048.0f), float_to_half(1.0f))), 2048.0f);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(gpu::MinOp::apply(nan, 1.0f)));
  EXPECT_EQ(gpu::MinOp::apply(1.0f, nan), 1.0f);
  EXPECT_TRUE(std::isnan(gpu::MaxOp::apply(nan, 1.0f)));
  EXPECT_EQ(gpu::MaxOp::apply(1.0f, nan), 1.0f);
  EXPECT_EQ(gpu::Finish<DType::i32>{2}(-7), -3);  // truncates toward zero
  EXPECT_EQ(bf16_to_float(gpu::Combine<DType::bf16, gpu::SumOp>{}(float_to_bf16(256.0f),
                                                                     float_to_bf16(1.0f))),
            256.0f);  // 257 ties to even in bf16's 8 bits
}

}  // namespace
}  // namespace gradex
