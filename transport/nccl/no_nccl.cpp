// Built instead of the nccl transport when gradex is built without CUDA
// and NCCL: asking for it is a configuration error that says why.
#include "common/errors.h"
#include "gpu/cuda.h"
#include "transport/nccl/world.h"

namespace gradex {

std::unique_ptr<World> make_nccl_world(int, const TransportOptions&) {
  require_cuda_device("/transport", "\"transport\": \"nccl\"");
  throw InvariantError("unreachable: a device without the CUDA build");
}

std::unique_ptr<GroupEndpoint> make_nccl_group_endpoint(std::unique_ptr<GroupEndpoint>,
                                                        const TransportOptions&) {
  require_cuda_device("/transport", "\"transport\": \"nccl\"");
  throw InvariantError("unreachable: a device without the CUDA build");
}

}  // namespace gradex
