// The in-process transport: ranks are threads of one process, messages move
// by a single copy (or a fused copy-and-reduce) straight from the sender's
// buffer into the receiver's, optionally delayed by link shaping. This is
// gradex's embedded default: no servers, no sockets.
//
// Sends are rendezvous (zero-copy): a send completes once its data has been
// taken by the matching receive, so a program must post its receives before
// blocking on its sends, as MPI's "safe" programs do. Whichever side of a
// pair arrives second moves the data, so no thread ever waits for another
// to be scheduled before the bytes can move.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/comm.h"
#include "common/topology.h"
#include "transport/options.h"
#include "transport/world.h"

namespace gradex {

class InprocWorld final : public World {
 public:
  InprocWorld(int size, TransportOptions options = {});
  ~InprocWorld();
  InprocWorld(const InprocWorld&) = delete;
  InprocWorld& operator=(const InprocWorld&) = delete;

  int size() const override;
  Comm& comm(int rank);
  // One thread per rank (run_ranks).
  void run(const std::function<void(Comm&)>& body) override;

  // Fails the whole group: every pending and future wait throws
  // PeerLostError naming `failed_rank`. The first call wins; later calls
  // are ignored. Safe from any thread.
  void abort(int failed_rank, const std::string& why) noexcept;
  // The rank that first failed, or -1.
  int failed_rank() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Runs `body` on every rank of `world`, one thread per rank, and joins them.
// A rank that throws aborts the world so the others fail fast instead of
// waiting out their timeouts; the exception of the rank that failed first
// (the root cause) is rethrown.
void run_ranks(InprocWorld& world, const std::function<void(Comm&)>& body);

}  // namespace gradex
