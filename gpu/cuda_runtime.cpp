// The CUDA build's side of gpu/cuda.h: what was built and found, device
// memory and its hooks, and the fill and check on a device.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

#include "common/device_memory.h"
#include "common/errors.h"
#include "common/verify.h"
#include "gpu/check.h"
#include "gpu/cuda.h"
#include "gpu/kernels.h"

namespace gradex {

namespace gpu {

void cuda_check(cudaError_t code, const std::string& what) {
  if (code == cudaSuccess) return;
  throw InvariantError(what + " failed: " + cudaGetErrorString(code));
}

void nccl_check(ncclResult_t code, const std::string& what) {
  if (code == ncclSuccess || code == ncclInProgress) return;
  throw InvariantError(what + " failed: " + ncclGetErrorString(code));
}

}  // namespace gpu

namespace {

std::string version_text(int v) {  // CUDA's 1000 major + 10 minor
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

std::string nccl_version_text() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "unknown";
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

// Device memory only: host and managed memory are the host's to touch.
bool on_device(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();  // not a pointer CUDA knows: host memory
    return false;
  }
  return a.type == cudaMemoryTypeDevice;
}

void device_copy(void* dst, const void* src, std::size_t bytes) {
  gpu::cuda_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, cudaStreamPerThread),
                  "cudaMemcpyAsync");
  gpu::cuda_check(cudaStreamSynchronize(cudaStreamPerThread), "cudaStreamSynchronize");
}

// A scheme's finish_reduce runs after its transfers completed (their waits
// returned), so the calling thread's own stream orders it.
void device_finish(Tensor data, ReduceOp op, int contributors) {
  gpu::launch_finish_reduce(data, op, contributors, cudaStreamPerThread);
  gpu::cuda_check(cudaStreamSynchronize(cudaStreamPerThread), "the avg kernel");
}

const DeviceMemoryHooks kHooks{&on_device, &device_copy, &device_finish};

}  // namespace

bool cuda_built() { return true; }

int cuda_device_count(std::string* why_none) {
  int n = 0;
  const cudaError_t code = cudaGetDeviceCount(&n);
  if (code != cudaSuccess) {
    cudaGetLastError();
    if (why_none != nullptr) {
      *why_none = std::string("no CUDA device (cudaGetDeviceCount: ") + cudaGetErrorString(code) + ")";
    }
    return 0;
  }
  if (n == 0 && why_none != nullptr) *why_none = "no CUDA device (cudaGetDeviceCount found none)";
  return n;
}

std::string cuda_summary() {
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  std::string text = "CUDA " + version_text(runtime) + " and NCCL " + nccl_version_text() +
                     " built in; ";
  std::string why;
  const int n = cuda_device_count(&why);
  if (n == 0) return text + why;
  text += std::to_string(n) + " CUDA device(s):";
  for (int d = 0; d < n; ++d) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, d) == cudaSuccess) {
      text += std::string(d ? "," : "") + " " + p.name + " (sm_" + std::to_string(p.major) +
              std::to_string(p.minor) + ")";
    }
  }
  return text;
}

void require_cuda_device(const std::string& field, const std::string& what) {
  std::string why;
  if (cuda_device_count(&why) > 0) return;
  throw ConfigError(field, what + " needs a GPU, and this machine has " + why);
}

std::shared_ptr<void> device_allocate(std::size_t bytes) {
  install_device_memory_hooks(&kHooks);
  void* p = nullptr;
  gpu::cuda_check(cudaMalloc(&p, bytes == 0 ? 1 : bytes), "cudaMalloc of " + std::to_string(bytes) + " bytes");
  gpu::cuda_check(cudaMemsetAsync(p, 0, bytes, cudaStreamPerThread), "cudaMemsetAsync");
  gpu::cuda_check(cudaStreamSynchronize(cudaStreamPerThread), "cudaMemsetAsync");
  return std::shared_ptr<void>(p, [](void* q) { cudaFree(q); });
}

void device_fill_collective_input(Collective c, Tensor data, int rank, int workers) {
  for (const PeriodicSpan& span : collective_fill_spans(c, data.count, rank, workers)) {
    gpu::launch_fill_span(data, span, cudaStreamPerThread);
  }
  gpu::cuda_check(cudaStreamSynchronize(cudaStreamPerThread), "the fill kernel");
}

std::size_t device_count_wrong_collective(Collective c, const Tensor& result, int rank,
                                          int workers, ReduceOp op) {
  if (result.data == nullptr) return 0;
  const std::shared_ptr<void> counter = device_allocate(sizeof(unsigned long long));
  auto* count = static_cast<unsigned long long*>(counter.get());
  for (const PeriodicSpan& span :
       collective_check_spans(c, result.count, result.dtype, rank, workers, op)) {
    gpu::launch_count_span_wrong(result, span, count, cudaStreamPerThread);
  }
  unsigned long long wrong = 0;
  gpu::cuda_check(cudaMemcpyAsync(&wrong, count, sizeof wrong, cudaMemcpyDeviceToHost,
                                  cudaStreamPerThread),
                  "cudaMemcpyAsync");
  gpu::cuda_check(cudaStreamSynchronize(cudaStreamPerThread), "the check kernel");
  return static_cast<std::size_t>(wrong);
}

}  // namespace gradex
