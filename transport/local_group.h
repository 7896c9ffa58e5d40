// A group of a process transport (tcp, zmq) inside one process, for tests
// and `gradex run`: every rank is a thread with an endpoint and sockets of
// its own, connected over loopback exactly as separate processes would be
// (Gloo's ranks-as-threads tests).
#pragma once

#include <functional>
#include <string>

#include "common/comm.h"
#include "transport/group_endpoint.h"
#include "transport/world.h"

namespace gradex {

// Runs `body` on `size` endpoints of `transport`, one thread each. A rank that throws
// aborts its endpoint, so the others fail with PeerLostError naming it
// instead of waiting out their timeouts; the exception of the rank that
// failed first (the root cause) is rethrown.
void run_endpoint_ranks(const std::string& transport, int size, const TransportOptions& options,
                        const std::function<void(Comm&)>& body);

// The same as a World: every run() connects a fresh group of endpoints.
class LocalGroup final : public World {
 public:
  LocalGroup(std::string transport, int size, TransportOptions options)
      : transport_(std::move(transport)), size_(size), options_(std::move(options)) {}
  int size() const override { return size_; }
  void run(const std::function<void(Comm&)>& body) override {
    run_endpoint_ranks(transport_, size_, options_, body);
  }

 private:
  std::string transport_;
  int size_;
  TransportOptions options_;
};

}  // namespace gradex
