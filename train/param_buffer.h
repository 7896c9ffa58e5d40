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
//
// Buffers of kMappedBytes and more are mapped from the kernel and unmapped
// when freed. Through malloc they would stay resident after being freed:
// glibc raises its mmap threshold to the size of each large block freed, so
// from the second on a freed buffer goes back to the heap, not the system.
// ZeRO-3 frees every gathered layer after use; with the heap holding them,
// a process kept the memory sharding gives back (a 10M-parameter MLP's
// worker peaked 50 MiB above what it held).
#pragma once

#include <sys/mman.h>

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

  static constexpr std::size_t kMappedBytes = std::size_t{1} << 20;

  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < kMappedBytes) return static_cast<T*>(::operator new(bytes, kAlignment));
    // Page-aligned, so 64-byte aligned too.
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < kMappedBytes) {
      ::operator delete(p, kAlignment);
    } else {
      munmap(p, bytes);
    }
  }

  template <typename U>
  bool operator==(const CacheLineAllocator<U>&) const noexcept { return true; }
};

using ParamBuffer = std::vector<float, CacheLineAllocator<float>>;

}  // namespace gradex
