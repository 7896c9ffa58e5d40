// One way to run a function on N ranks, whatever carries their messages:
// make_world(transport name, size, options), then world.run(body). The
// runner's executor, the measurement loop and training take a World, so
// every one of them runs on every transport:
//   inproc  threads of this process (transport/inproc/world.h);
//   tcp     threads of this process, each holding a loopback endpoint with
//   zmq     sockets of its own, exactly as separate processes would
//           (transport/local_group.h);
//   sim     fibers on the simulator's virtual clock (transport/sim/world.h);
//   nccl    threads each driving a GPU through NCCL (transport/nccl/world.h).
// A launched process holds one rank of a group of processes; the runner
// gives it the same body (runner/group_run.h).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/comm.h"
#include "transport/options.h"

namespace gradex {

class World {
 public:
  virtual ~World() = default;
  virtual int size() const = 0;
  // Runs `body` on every rank and returns once all have. A rank that throws
  // fails the others (they see PeerLostError instead of waiting out their
  // timeouts) and the exception of the rank that failed first, the root
  // cause, is rethrown. Worlds that allow it run again afterwards.
  virtual void run(const std::function<void(Comm&)>& body) = 0;
};

// Throws ConfigError("/transport") for a name not in kAllTransportNames.
std::unique_ptr<World> make_world(const std::string& transport, int size,
                                  const TransportOptions& options);

}  // namespace gradex
