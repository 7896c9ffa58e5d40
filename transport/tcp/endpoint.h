// The TCP transport: one endpoint of a group, one connection per peer pair
// (set up with Boost.Asio, mesh.h), length-prefixed frames (transport/wire/frame.h).
//
// There is no I/O thread: the thread that uses the endpoint drives every
// connection whenever it waits (writing what is queued to any peer and
// reading whatever has arrived from any peer), and a send goes out from the
// posting call when its connection is idle. Sends and receives to all peers
// thus progress together during every wait, as in MPI. A wait polls for
// EndpointOptions::spin before it sleeps, so a message that arrives soon
// costs no wake-up of the receiving process at all.
//
// Sends are eager: a send completes once its bytes are handed to the
// kernel, whether or not the receive is posted. A message that arrives
// before its receive lands in a buffer of its own and is copied when the
// receive is posted; one whose receive is already posted is read straight
// into the receive buffer (no copy), and a receive-reduce reads in
// cache-sized chunks that are combined into the destination as they arrive.
//
// Failures end the whole endpoint, as in MPI: a peer whose connection drops
// without a goodbye, a malformed frame, or an abort notice from a peer makes
// every pending and future wait throw PeerLostError naming the rank that
// failed first; a wait that times out throws TimeoutError and notifies the
// peers, so the group ends within one timeout instead of hanging.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "transport/group_endpoint.h"

namespace gradex {

using TcpOptions = EndpointOptions;

class TcpEndpoint final : public GroupEndpoint {
 public:
  // Binds and listens; throws ConfigError when the address is unusable.
  TcpEndpoint(int rank, int size, TcpOptions options);
  ~TcpEndpoint() override;
  TcpEndpoint(const TcpEndpoint&) = delete;
  TcpEndpoint& operator=(const TcpEndpoint&) = delete;

  // "host:port" where the peers reach this endpoint.
  std::string address() const override;
  // Connects the group (`addresses[r]` is rank r's address()) within the
  // timeout.
  void connect(const std::vector<std::string>& addresses) override;
  // Orderly end: says goodbye to every peer and waits (within the timeout)
  // for theirs, so no peer mistakes the close for a failure.
  void close() override;
  // Ends the group: every wait here throws, and every peer is told that
  // `failed_rank` failed because of `why`. Idempotent.
  void abort(int failed_rank, const std::string& why) noexcept override;

  // Replaces the shaping model (nullopt: unshaped). Only while no message
  // is in flight anywhere in the group, e.g. between two barriers.
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
