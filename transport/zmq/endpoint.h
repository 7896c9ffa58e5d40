// The ZeroMQ transport (libzmq): the PS's natural transport, as in ps-lite.
// Each endpoint binds one ROUTER socket that every peer's messages arrive
// on, and holds one DEALER per peer to send with (its routing id is
// assigned by the peer's ROUTER), so every pair of ranks
// shares two one-way connections.
//
// Messages are multipart: the frame header of transport/wire/frame.h, then
// the payload. Matching, waits, shaping, close and abort are the process
// skeleton's (transport/process_endpoint.h). As with tcp there is no
// receiving thread of gradex's own: the thread that waits polls the ROUTER
// (and the disconnection monitors) itself, so a message costs libzmq's own
// I/O-thread hand-offs and nothing more. Small payloads are copied into
// libzmq's message and the send completes at once; large ones are lent to
// libzmq (zero-copy) and the send completes when libzmq gives the buffer
// back. libzmq receives a whole message into memory of its own (refusing
// any longer than max_message_bytes, ZMQ_MAXMSGSIZE, before allocating
// it); it is then copied, or combined for a receive-reduce, straight into
// the destination.
//
// Admission: a DEALER's first message is a hello (magic, version, rank,
// world size, nonce); the ROUTER answers with a challenge on the same
// connection, the DEALER with its proof (transport/wire/auth.h), the ROUTER
// with an ack. A routing id is tied to a rank only after its proof checks
// out; nothing else is accepted from it. The sockets also run CURVE keyed
// by the token (transport/zmq/curve.h). Peer loss: a socket monitor reports
// a DEALER's disconnection, which fails the endpoint with PeerLostError
// naming that rank unless it said goodbye.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "transport/process_endpoint.h"

namespace gradex {

class ZmqEndpoint final : public transport::ProcessEndpoint {
 public:
  // Binds the ROUTER; throws ConfigError when the address is unusable.
  ZmqEndpoint(int rank, int size, TransportOptions options);
  ~ZmqEndpoint() override;
  ZmqEndpoint(const ZmqEndpoint&) = delete;
  ZmqEndpoint& operator=(const ZmqEndpoint&) = delete;

  std::string address() const override;
  void connect(const std::vector<std::string>& addresses) override;

  struct Impl;

 private:
  void write(const transport::OutgoingPtr& frame) override;
  void progress(double until) override;
  bool flushed() const override;
  void notify(int peer, const transport::Outgoing& frame) noexcept override;
  void disconnect(bool orderly) noexcept override;

  std::unique_ptr<Impl> impl_;
};

}  // namespace gradex
