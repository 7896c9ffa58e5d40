// What a process-level transport (tcp, zmq) offers beyond Comm: one
// endpoint of a group whose members are separate processes (or threads with
// sockets of their own), found through their addresses, ended in order or
// by an abort that every peer hears about. The launcher and the tests drive
// every such transport through this one interface.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/comm.h"
#include "common/topology.h"
#include "transport/options.h"

namespace gradex {

class GroupEndpoint : public Comm {
 public:
  // "host:port" where the peers reach this endpoint.
  virtual std::string address() const = 0;
  // Connects the group (`addresses[r]` is rank r's address()) within the
  // timeout; throws TimeoutError naming the missing ranks, or Error when a
  // peer refuses this one (token, world size).
  virtual void connect(const std::vector<std::string>& addresses) = 0;
  // Orderly end: says goodbye to every peer and waits (within the timeout)
  // for theirs, so no peer mistakes the close for a failure.
  virtual void close() = 0;
  // Ends the group: every wait here throws, and every peer is told that
  // `failed_rank` failed because of `why`. Idempotent.
  virtual void abort(int failed_rank, const std::string& why) noexcept = 0;
  // Replaces the shaping model (nullopt: unshaped). Only while no message
  // is in flight anywhere in the group, e.g. between two barriers.
  virtual void set_shaping(const std::optional<Topology>& topology) = 0;
};

// The process transports of this build, by scenario name ("tcp", "zmq").
std::vector<std::string> group_transports();
// Binds and listens; throws ConfigError for an unknown transport name.
std::unique_ptr<GroupEndpoint> make_group_endpoint(const std::string& transport, int rank,
                                                   int size, const TransportOptions& options);

}  // namespace gradex
