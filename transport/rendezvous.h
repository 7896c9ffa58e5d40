// Finding each other: every rank of a launched run registers its endpoint's
// address with a small TCP store that rank 0 hosts at the rendezvous address
// (GRADEX_RENDEZVOUS, like torchrun's env:// master address), and receives
// the whole table once every rank has registered. The store admits a rank
// only after the challenge-response of transport/wire/auth.h (store and rank each prove
// they hold the run's token), so a stray process cannot join or be joined;
// connections that do not authenticate in time are dropped (transport/wire/admission_queue.h).
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

  // The ranks that have not registered (yet), for a timeout's message.
  std::vector<int> missing() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// The address of this host's interface that routes to `server` (host:port):
// what peers can dial when the endpoint listens on a wildcard and no
// address to advertise was given. Throws ConfigError naming
// GRADEX_ADVERTISE when the route cannot be found.
std::string local_address_towards(const std::string& server);

// "ranks 2, 3 never registered" ("" when none is missing).
std::string never_registered(const std::vector<int>& ranks);

// Registers `my_address` as rank `rank` of `size` and returns every rank's
// address. Retries the connection until the deadline (the store may start
// later than this rank); throws TimeoutError, or Error when refused.
std::vector<std::string> rendezvous(const std::string& server, int rank, int size,
                                    const std::string& token, const std::string& my_address,
                                    std::chrono::milliseconds timeout);

}  // namespace gradex::tcp
