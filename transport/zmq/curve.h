// ZeroMQ's own security (CURVE, through libsodium) keyed by the run's token:
// every ROUTER holds one server key pair derived from the token, and a
// DEALER must know its public half to complete the handshake. A peer
// without the token cannot derive that key, so libzmq drops its connection
// inside the handshake, whose messages are a few hundred bytes: nothing it
// sends is ever delivered, allocated at the plan's size or tied to a rank.
// (Admission by the HMAC challenge, transport/wire/auth.h, still binds each
// connection to a rank.) Every message after the handshake is encrypted.
#pragma once

#include <string>

namespace gradex::zmq_security {

// Throws Error when this libzmq was built without CURVE.
void require_curve();
// Makes `router` a CURVE server with the key pair derived from `token`.
void make_server(void* router, const std::string& token);
// Makes `dealer` a CURVE client of servers keyed by `token` (its own key
// pair is fresh: the server authenticates by the token, not by it).
void make_client(void* dealer, const std::string& token);

}  // namespace gradex::zmq_security
