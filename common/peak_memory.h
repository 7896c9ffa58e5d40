// The process's peak resident memory (Linux's VmHWM), and its reset, so
// that each training run of a launched rank reports its own peak: the
// memory ZeRO's sharding saves, as a user would see it in `top`. Threads
// of one process share it: in-process ranks report the whole process.
#pragma once

#include <cstddef>

namespace gradex {

// Makes the peak start again from the current resident size (Linux >= 4.0,
// /proc/self/clear_refs); false where that is not possible.
bool reset_peak_resident_bytes();
// The peak resident size since start or the last reset; 0 if unknown.
std::size_t peak_resident_bytes();

}  // namespace gradex
