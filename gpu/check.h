// CUDA runtime and NCCL return codes as exceptions that say which call
// failed and why.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

namespace gradex::gpu {

// Throws InvariantError "`what` failed: <the runtime's text>".
void cuda_check(cudaError_t code, const std::string& what);
void nccl_check(ncclResult_t code, const std::string& what);

}  // namespace gradex::gpu
