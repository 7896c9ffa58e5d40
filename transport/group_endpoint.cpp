#include "transport/group_endpoint.h"

#include "common/errors.h"
#include "transport/tcp/endpoint.h"
#include "transport/zmq/endpoint.h"

namespace gradex {

std::vector<std::string> group_transports() {
  return {std::begin(kProcessTransports), std::end(kProcessTransports)};
}

std::unique_ptr<GroupEndpoint> make_group_endpoint(const std::string& transport, int rank,
                                                   int size, const TransportOptions& options) {
  if (transport == "tcp") return std::make_unique<TcpEndpoint>(rank, size, options);
  if (transport == "zmq") return std::make_unique<ZmqEndpoint>(rank, size, options);
  throw ConfigError("/transport", "'" + transport + "' is not a process transport (tcp, zmq)");
}

}  // namespace gradex
