// The nccl transport: ranks that each drive one GPU and move their
// messages with NCCL's ncclSend/ncclRecv on device buffers
// (transport/nccl/comm.h). Built with CUDA and NCCL; otherwise every entry
// point throws ConfigError saying so (transport/nccl/no_nccl.cpp).
//   In one process: one thread per GPU, rank r on device r.
//   One process per GPU (gradex launch, mpirun, torchrun): the process
//   joins a tcp group first, which carries NCCL's unique id from rank 0
//   and the group's orderly close and abort; LOCAL_RANK (or Open MPI's
//   OMPI_COMM_WORLD_LOCAL_RANK) picks the device.
#pragma once

#include <memory>

#include "transport/group_endpoint.h"
#include "transport/options.h"
#include "transport/world.h"

namespace gradex {

std::unique_ptr<World> make_nccl_world(int size, const TransportOptions& options);

// Wraps a connected endpoint of a process transport (the control group)
// into an endpoint of the nccl transport with the same rank and size.
std::unique_ptr<GroupEndpoint> make_nccl_group_endpoint(std::unique_ptr<GroupEndpoint> control,
                                                        const TransportOptions& options);

}  // namespace gradex
