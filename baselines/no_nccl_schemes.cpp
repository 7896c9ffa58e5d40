// Built instead of nccl_schemes.cpp without CUDA and NCCL: the NCCL
// baselines are listed as unavailable, with the reason.
#include "baselines/nccl_schemes.h"

#include "gpu/cuda.h"

namespace gradex {

std::vector<BaselineScheme> nccl_baselines() { return {}; }

bool nccl_baselines_available(std::string* why_not) {
  cuda_device_count(why_not);
  return false;
}

}  // namespace gradex
