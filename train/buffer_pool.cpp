#include "train/buffer_pool.h"

#include <algorithm>
#include <utility>

namespace gradex {

ParamBuffer BufferPool::take(std::size_t floats) { return take_sized(floats, true); }

ParamBuffer BufferPool::take_for_overwrite(std::size_t floats) {
  return take_sized(floats, false);
}

ParamBuffer BufferPool::take_sized(std::size_t floats, bool zeroed) {
  ParamBuffer b;
  {
    std::lock_guard lock(mutex_);
    auto best = spares_.end();
    for (auto it = spares_.begin(); it != spares_.end(); ++it) {
      if (it->capacity() >= floats && (best == spares_.end() || it->capacity() < best->capacity())) {
        best = it;
      }
    }
    if (best != spares_.end()) {
      kept_ -= best->capacity();
      b = std::move(*best);
      spares_.erase(best);
    }
  }
  if (b.capacity() < floats) b.reserve(floats);  // nothing kept fits: new storage
  if (zeroed) {
    b.assign(floats, 0.0f);
  } else {
    b.resize(floats);  // zeros only past what the storage last held
  }
  std::lock_guard lock(mutex_);
  live_ += b.capacity();
  peak_live_ = std::max(peak_live_, live_);
  return b;
}

void BufferPool::give_back(ParamBuffer buffer) {
  std::lock_guard lock(mutex_);
  const std::size_t capacity = buffer.capacity();
  live_ -= capacity;
  if (live_ + kept_ + capacity > peak_live_) return;  // released as `buffer` goes
  kept_ += capacity;
  spares_.push_back(std::move(buffer));
}

void BufferPool::release_kept() {
  std::vector<ParamBuffer> released;
  {
    std::lock_guard lock(mutex_);
    released.swap(spares_);
    kept_ = 0;
  }
}

std::size_t BufferPool::live() const {
  std::lock_guard lock(mutex_);
  return live_;
}

std::size_t BufferPool::peak_live() const {
  std::lock_guard lock(mutex_);
  return peak_live_;
}

std::size_t BufferPool::kept() const {
  std::lock_guard lock(mutex_);
  return kept_;
}

}  // namespace gradex
