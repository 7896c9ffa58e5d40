// Memory for the simulator's operations, reused. A simulated message makes
// and drops two operations (its send and its receive), millions of times
// in a large run, and with thousands of ranks the frees overflow malloc's
// small per-thread caches: a free list of one block size costs a few
// instructions instead.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <new>
#include <vector>

namespace gradex::sim {

// Blocks of the first size asked for, kept once freed; other sizes go to
// operator new. Not thread-safe: a simulated world runs on one thread.
class BlockPool {
 public:
  BlockPool() = default;
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;
  ~BlockPool() {
    for (void* b : free_) ::operator delete(b);
  }

  void* take(std::size_t bytes) {
    peak_ = std::max(peak_, ++live_);
    if (block_ == 0) block_ = bytes;
    if (bytes != block_ || free_.empty()) return ::operator new(bytes);
    void* b = free_.back();
    free_.pop_back();
    return b;
  }
  void give(void* p, std::size_t bytes) {
    --live_;
    if (bytes != block_) {
      ::operator delete(p);
      return;
    }
    free_.push_back(p);
  }
  // The most blocks taken and not yet given back at once.
  std::size_t peak() const { return peak_; }

 private:
  std::size_t live_ = 0;
  std::size_t peak_ = 0;
  std::size_t block_ = 0;
  std::vector<void*> free_;
};

// A standard allocator over a BlockPool: what std::allocate_shared needs.
// The pool must outlive every allocation.
template <class T>
struct PoolAllocator {
  using value_type = T;

  explicit PoolAllocator(BlockPool* p) : pool(p) {}
  template <class U>
  PoolAllocator(const PoolAllocator<U>& other) : pool(other.pool) {}  // NOLINT: rebinding

  T* allocate(std::size_t n) {
    static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__, "operator new's alignment");
    return static_cast<T*>(pool->take(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) { pool->give(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const PoolAllocator<U>& other) const {
    return pool == other.pool;
  }

  BlockPool* pool;
};

}  // namespace gradex::sim
