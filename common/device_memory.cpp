#include "common/device_memory.h"

#include <atomic>
#include <cstring>

namespace gradex {

namespace {
std::atomic<const DeviceMemoryHooks*> installed{nullptr};
}  // namespace

void install_device_memory_hooks(const DeviceMemoryHooks* hooks) {
  installed.store(hooks, std::memory_order_release);
}

const DeviceMemoryHooks* device_hooks_for(const void* p) {
  const DeviceMemoryHooks* h = installed.load(std::memory_order_acquire);
  return h != nullptr && p != nullptr && h->on_device(p) ? h : nullptr;
}

void copy_bytes(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  const DeviceMemoryHooks* h = device_hooks_for(dst);
  if (h == nullptr) h = device_hooks_for(src);
  if (h != nullptr) {
    h->copy(dst, src, bytes);
  } else {
    std::memcpy(dst, src, bytes);
  }
}

}  // namespace gradex
