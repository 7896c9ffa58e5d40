// Finding each other: every rank of a launched run registers its endpoint's
// address with a small TCP store that rank 0 hosts at the rendezvous address
// (GRADEX_RENDEZVOUS, like torchrun's env:// master address), and receives
// the whole table once every rank has registered. The store admits a rank
// only with the run's token, so a stray process cannot join or be joined.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace gradex::tcp {

class RendezvousServer {
 public:
  // Binds `address` (host:port) now, so the clients can start at once;
  // serves `size` registrations on a thread of its own until they are all
  // in or `timeout` passes. Throws ConfigError when it cannot bind.
  RendezvousServer(const std::string& address, int size, std::string token,
                   std::chrono::milliseconds timeout);
  ~RendezvousServer();
  RendezvousServer(const RendezvousServer&) = delete;
  RendezvousServer& operator=(const RendezvousServer&) = delete;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Registers `my_address` as rank `rank` of `size` and returns every rank's
// address. Retries the connection until the deadline (the store may start
// later than this rank); throws TimeoutError, or Error when refused.
std::vector<std::string> rendezvous(const std::string& server, int rank, int size,
                                    const std::string& token, const std::string& my_address,
                                    std::chrono::milliseconds timeout);

}  // namespace gradex::tcp
