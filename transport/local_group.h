// A group of a process transport (tcp, zmq) inside one process, for tests
// and `gradex run`: every rank is a thread with an endpoint and sockets of
// its own, connected over loopback exactly as separate processes would be
// (Gloo's ranks-as-threads tests).
#pragma once

#include <functional>

#include "common/comm.h"
#include <string>

#include "transport/group_endpoint.h"

namespace gradex {

// Runs `body` on `size` endpoints of `transport`, one thread each. A rank that throws
// aborts its endpoint, so the others fail with PeerLostError naming it
// instead of waiting out their timeouts; the exception of the rank that
// failed first (the root cause) is rethrown.
void run_endpoint_ranks(const std::string& transport, int size, const EndpointOptions& options,
                        const std::function<void(Comm&)>& body);

}  // namespace gradex
