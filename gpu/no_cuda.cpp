// Built instead of the CUDA sources when the toolkit or NCCL was not found
// (or GRADEX_CUDA=OFF): no device is ever used, and asking for one is a
// configuration error that says why.
#include "gpu/cuda.h"

#include "common/errors.h"

namespace gradex {

namespace {
constexpr const char* kNotBuilt =
    "gradex was built without CUDA and NCCL (install the CUDA toolkit and NCCL under "
    "CUDA_HOME and rebuild)";
}  // namespace

bool cuda_built() { return false; }
std::string cuda_summary() { return "CUDA and NCCL not built in"; }

int cuda_device_count(std::string* why_none) {
  if (why_none != nullptr) *why_none = kNotBuilt;
  return 0;
}

void require_cuda_device(const std::string& field, const std::string& what) {
  throw ConfigError(field, what + " needs a GPU, and " + kNotBuilt);
}

std::shared_ptr<void> device_allocate(std::size_t) { throw ConfigError("device", kNotBuilt); }

void device_fill_collective_input(Collective, Tensor, int, int) {
  throw ConfigError("device", kNotBuilt);
}

std::size_t device_count_wrong_collective(Collective, const Tensor&, int, int, ReduceOp) {
  throw ConfigError("device", kNotBuilt);
}

}  // namespace gradex
