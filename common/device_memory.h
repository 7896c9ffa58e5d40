// Buffers a scheme is handed may live on a GPU ("device": "cuda"), where
// host code must not touch them. Schemes see only Comm and Tensor; the few
// host-side steps they take on a buffer's bytes (avg's final division, a
// copy between buffers) go through here, and the GPU part (gpu/) installs
// the device versions when it first allocates device memory. Without it
// these are the host operations they always were.
#pragma once

#include <cstddef>

#include "common/dtype.h"
#include "common/reduce.h"

namespace gradex {

struct DeviceMemoryHooks {
  bool (*on_device)(const void* p) = nullptr;
  // Between any two pointers, host or device; returns once the copy is done.
  void (*copy)(void* dst, const void* src, std::size_t bytes) = nullptr;
  void (*finish_reduce)(Tensor data, ReduceOp op, int contributors) = nullptr;
};

// Installed once per process (later calls with the same hooks are no-ops).
void install_device_memory_hooks(const DeviceMemoryHooks* hooks);
// The installed hooks if `p` is device memory, else null.
const DeviceMemoryHooks* device_hooks_for(const void* p);

// std::memcpy where both sides are host memory; the device copy otherwise.
void copy_bytes(void* dst, const void* src, std::size_t bytes);

}  // namespace gradex
