// The simulated transport: the same scheme code, run on a virtual clock.
//
// Every rank is a fiber (transport/sim/fiber.h) driven by one deterministic
// discrete-event scheduler on the calling thread: a rank runs until it
// waits on something not yet complete, then the scheduler runs the next
// ready rank, or advances virtual time to the next network event
// (transport/sim/network.h). Nothing depends on wall time, so a run is exactly
// repeatable, and 1,024 ranks cost 1,024 small stacks.
//
// Semantics mirror the shaped in-process transport (transport/inproc), so a
// shaped real run and a simulation of the same scenario can be compared:
// a message starts crossing the sender's egress when the send is posted;
// the send completes once it is matched (rendezvous) and the bytes have
// left; the receive completes once it is posted, matched and the bytes
// plus the link latency have arrived. Matching is FIFO per (source, tag).
//
// Buffers may be real (data is copied or reduced at the match, as the
// in-process transport does, so results can be checked) or phantom (data
// == nullptr: sizes only, nothing touched). With `phantom_payloads` set the
// Comm tells schemes not to allocate scratch memory either.
//
// A simulated deadlock - every unfinished rank blocked and no event
// pending - throws TimeoutError naming each stuck rank and what it waits
// for; a rank that throws fails the others with PeerLostError, and the
// root cause is rethrown, as run_ranks does for threads.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "common/comm.h"
#include "common/topology.h"
#include "transport/sim/stats.h"
#include "transport/world.h"

namespace gradex::sim {

// Each rank's fiber stack: the schemes' frames are shallow.
inline constexpr std::size_t kFiberStackBytes = std::size_t{256} << 10;

class SimWorld final : public World {
 public:
  // options.shaping is the network, one endpoint per rank (absent:
  // instantaneous links); options.phantom_payloads says whether buffers are
  // phantoms. Timeouts and spins do not apply: a simulated wait ends or the
  // run deadlocks, and a deadlock is detected exactly.
  SimWorld(int size, const TransportOptions& options);
  ~SimWorld();
  SimWorld(const SimWorld&) = delete;
  SimWorld& operator=(const SimWorld&) = delete;

  int size() const override;
  Comm& comm(int rank);
  // Virtual seconds since the world was made; only moves inside run().
  double now() const;
  const SimStats& stats() const;

  // Runs `body` on every rank as fibers until all return (virtual time
  // carries over between calls). Rethrows the first rank's error, or a
  // TimeoutError on deadlock.
  void run(const std::function<void(Comm&)>& body) override;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace gradex::sim
