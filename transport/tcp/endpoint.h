// The TCP transport: one endpoint of a group, one connection per peer pair
// (set up with Boost.Asio, transport/tcp/mesh.h), length-prefixed frames
// (transport/wire/frame.h). Matching, waits, shaping, close and abort are
// the process skeleton's (transport/process_endpoint.h); this file moves
// bytes between sockets and buffers.
//
// The thread that waits drives every connection (writing what is queued to
// any peer, reading whatever has arrived from any peer) with one ppoll(),
// and a send goes out from the posting call when its connection is idle.
// Sends are eager: a send completes once its bytes are handed to the
// kernel, whether or not the receive is posted. A message that arrives
// before its receive lands in a buffer of its own and is copied when the
// receive is posted; one whose receive is already posted is read straight
// into the receive buffer (no copy), and a receive-reduce reads in
// cache-sized chunks that are combined into the destination as they arrive.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "transport/process_endpoint.h"

namespace gradex {


class TcpEndpoint final : public transport::ProcessEndpoint {
 public:
  // Binds and listens; throws ConfigError when the address is unusable.
  TcpEndpoint(int rank, int size, TransportOptions options);
  ~TcpEndpoint() override;
  TcpEndpoint(const TcpEndpoint&) = delete;
  TcpEndpoint& operator=(const TcpEndpoint&) = delete;

  std::string address() const override;
  void connect(const std::vector<std::string>& addresses) override;

  struct Impl;

 private:
  void write(const transport::OutgoingPtr& frame) override;
  void progress(double until) override;
  bool flushed() const override;
  void notify(int peer, const transport::Outgoing& frame) noexcept override;
  void disconnect(bool orderly) noexcept override;
  std::string describe_connections() const override;

  std::unique_ptr<Impl> impl_;
};

}  // namespace gradex
