// What the rest of gradex asks of the GPU part, in a header without CUDA
// types: built with CUDA and NCCL (gpu/*.cu, gpu/cuda_runtime.cpp) or
// without (gpu/no_cuda.cpp, which says so wherever a GPU is asked for).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "common/collective.h"
#include "common/dtype.h"
#include "common/reduce.h"

namespace gradex {

// gradex was built with the CUDA toolkit and NCCL.
bool cuda_built();
// "CUDA 13.0, NCCL 2.28.9 built in; 2 devices (NVIDIA H100 ...)" or why not:
// for `gradex --version` and every results file's provenance.
std::string cuda_summary();
// CUDA devices this process sees (0 without the CUDA build, without a
// driver or without a GPU); `why_none` says why when there are none.
int cuda_device_count(std::string* why_none = nullptr);
// Throws ConfigError naming `field` unless gradex was built with CUDA and
// a device is present; `what` says what needed it ("\"device\": \"cuda\"").
void require_cuda_device(const std::string& field, const std::string& what);

// `bytes` of memory on this thread's current device (zeroed), freed when
// the last copy of the pointer goes. Installs the device memory hooks
// (common/device_memory.h) so that schemes' host steps reach the device.
std::shared_ptr<void> device_allocate(std::size_t bytes);

// common/verify.h's fill and check on a device buffer, as kernels.
void device_fill_collective_input(Collective c, Tensor data, int rank, int workers);
std::size_t device_count_wrong_collective(Collective c, const Tensor& result, int rank,
                                          int workers, ReduceOp op);

}  // namespace gradex
