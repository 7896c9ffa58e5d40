// NCCL's own collectives as registry entries next to gradex's schemes,
// measured in the same tables (as the MPI baselines are):
//   nccl_allreduce     ncclAllReduce, NCCL's choice of ring or tree;
//   nccl_reduce_bcast  ncclReduce to rank 0 then ncclBroadcast: the
//                      central-server pattern done by the library.
// They run on "transport": "nccl" (its communicator over the workers) with
// device buffers, move nothing through gradex's Comm (their declared and
// counted traffic is zero), and report bus bandwidth with nccl-tests'
// factors, so their rows compare with all_reduce_perf's directly.
#pragma once

#include <string>
#include <vector>

#include "baselines/mpi_schemes.h"

namespace gradex {

// Empty when gradex was built without CUDA and NCCL.
std::vector<BaselineScheme> nccl_baselines();
// Whether they can run in this process: built, and a CUDA device present;
// `why_not` says what is missing.
bool nccl_baselines_available(std::string* why_not = nullptr);

}  // namespace gradex
