#include "transport/world.h"

#include "common/errors.h"
#include "transport/inproc/world.h"
#include "transport/local_group.h"
#include "transport/nccl/world.h"
#include "transport/sim/world.h"

namespace gradex {

std::unique_ptr<World> make_world(const std::string& transport, int size,
                                  const TransportOptions& options) {
  if (transport == "inproc") return std::make_unique<InprocWorld>(size, options);
  if (transport == "sim") return std::make_unique<sim::SimWorld>(size, options);
  if (transport == kGpuTransport) return make_nccl_world(size, options);
  for (std::string_view name : kProcessTransports) {
    if (transport == name) return std::make_unique<LocalGroup>(transport, size, options);
  }
  std::string known;
  for (std::string_view name : kAllTransportNames) known += (known.empty() ? "" : ", ") + std::string(name);
  throw ConfigError("/transport", "unknown transport '" + transport + "' (known: " + known + ")");
}

}  // namespace gradex
