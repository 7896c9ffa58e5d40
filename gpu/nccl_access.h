// What the NCCL baselines (baselines/nccl_schemes.cpp) need from the Comm
// they run on: the nccl transport's communicator over the whole group and
// a way to wait for work on it that keeps the transport's deadline and
// abort. The nccl transport's endpoints implement it; on any other Comm
// the baselines refuse to run.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

namespace gradex::gpu {

class NcclAccess {
 public:
  virtual ~NcclAccess() = default;
  // Every rank of the group, NCCL rank = gradex rank.
  virtual ncclComm_t group_comm() = 0;
  // The stream collectives on group_comm() go on.
  virtual cudaStream_t collective_stream() = 0;
  // Blocks until the work queued on collective_stream() so far is done,
  // within the transport's timeout; on timeout or an NCCL error aborts the
  // communicators and throws, naming `what`.
  virtual void wait_collective(const std::string& what) = 0;
};

}  // namespace gradex::gpu
