// The ZeroMQ transport (libzmq): the PS's natural transport, as in ps-lite.
// Each endpoint binds one ROUTER socket that every peer's messages arrive
// on, and holds one DEALER per peer to send with (its routing id is
// assigned by the peer's ROUTER), so every pair of ranks
// shares two one-way connections.
//
// Messages are multipart: the same 32-byte header as the TCP transport
// (transport/wire/frame.h: magic, version, kind, tag, length, shaping stamp),
// then the payload. Sends are zero-copy (zmq_msg_init_data): a send
// completes when libzmq releases the buffer. libzmq receives a whole
// message into memory of its own (refusing any longer than
// max_message_bytes, ZMQ_MAXMSGSIZE, before allocating it); it is then
// copied, or combined for a receive-reduce, straight into the destination.
//
// Admission: a DEALER's first message is a hello (magic, version, rank,
// world size, nonce); the ROUTER answers with a challenge on the same
// connection, the DEALER with its proof (transport/wire/auth.h), the ROUTER with
// an ack. A routing id is tied to a rank only after its proof checks out;
// nothing else is accepted from it. Peer loss: a
// socket monitor reports a DEALER's disconnection, which fails the
// endpoint with PeerLostError naming that rank unless it said goodbye.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "transport/group_endpoint.h"

namespace gradex {

class ZmqEndpoint final : public GroupEndpoint {
 public:
  // Binds the ROUTER; throws ConfigError when the address is unusable.
  ZmqEndpoint(int rank, int size, EndpointOptions options);
  ~ZmqEndpoint() override;
  ZmqEndpoint(const ZmqEndpoint&) = delete;
  ZmqEndpoint& operator=(const ZmqEndpoint&) = delete;

  std::string address() const override;
  // Also starts the receiving thread.
  void connect(const std::vector<std::string>& addresses) override;
  void close() override;
  void abort(int failed_rank, const std::string& why) noexcept override;
  void set_shaping(const std::optional<Topology>& topology) override;

  int rank() const override;
  int size() const override;
  Clock& clock() override;
  std::chrono::milliseconds timeout() const override;

  struct Impl;

 protected:
  std::shared_ptr<RequestState> start_send(int peer, const void* data, std::size_t bytes,
                                           Tag tag) override;
  std::shared_ptr<RequestState> start_recv(int peer, void* data, std::size_t bytes,
                                           Tag tag) override;
  std::shared_ptr<RequestState> start_recv_reduce(int peer, Tensor dst, ReduceOp op,
                                                  Tag tag) override;
  void wait_state(RequestState& state) override;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace gradex
