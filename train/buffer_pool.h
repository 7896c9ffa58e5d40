// Storage for buffers that are freed and taken again many times a step:
// ZeRO-3 gathers and frees every layer twice a step and every gradient
// once. Fresh memory costs a page fault per 4 KiB each time (a third of a
// 10M-parameter MLP's step on this machine), so freed storage is kept and
// handed out again, as PyTorch's caching allocator keeps freed blocks. But
// the pool never holds more than the most that was ever live at once (in
// capacity), so a process's peak stays what its live buffers make it:
// storage given back beyond that is released.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

#include "train/param_buffer.h"

namespace gradex {

class BufferPool {
 public:
  // `floats` zeros, in the smallest kept storage that holds them, or new.
  ParamBuffer take(std::size_t floats);
  // `floats` elements whose values are whatever the storage held, for a
  // buffer that is written whole before it is read (a gathered layer):
  // the zeros would cost a pass over it.
  ParamBuffer take_for_overwrite(std::size_t floats);
  // Storage taken from this pool, no longer used. Thread-safe, as take().
  void give_back(ParamBuffer buffer);
  // Releases the storage kept, where no more buffers are taken for a while
  // (the peak would otherwise add it to whatever comes next).
  void release_kept();

  // In floats of capacity: storage handed out and not given back, the
  // most of it ever, and storage kept for reuse.
  std::size_t live() const;
  std::size_t peak_live() const;
  std::size_t kept() const;

 private:
  ParamBuffer take_sized(std::size_t floats, bool zeroed);

  mutable std::mutex mutex_;
  std::vector<ParamBuffer> spares_;
  std::size_t live_ = 0, peak_live_ = 0, kept_ = 0;
};

}  // namespace gradex
