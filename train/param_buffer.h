// The flat parameter and gradient vectors, allocated on a 64-byte boundary.
//
// Eigen's element-wise loops and small products over a Map split the
// buffer at its first packet-aligned element: the elements before it take a
// scalar path that rounds differently (other summation order, no FMA) from
// the vector body. With 16-byte SSE packets malloc's alignment made that
// split the same in every buffer; with 32-byte AVX packets (-march=native)
// it would depend on where the allocation landed, and replicas, or one run
// on two transports, would end a few bits apart. Aligning every buffer that
// models and optimizers map makes the split a function of the offset alone.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace gradex {

template <typename T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlignment{64};

  CacheLineAllocator() = default;
  template <typename U>
  CacheLineAllocator(const CacheLineAllocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new(n * sizeof(T), kAlignment));
  }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, kAlignment); }

  template <typename U>
  bool operator==(const CacheLineAllocator<U>&) const noexcept { return true; }
};

using ParamBuffer = std::vector<float, CacheLineAllocator<float>>;

}  // namespace gradex
