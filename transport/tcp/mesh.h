// Connecting a group of TCP endpoints: one connection per pair of ranks.
//
// Every endpoint listens before its address is published; rank r then
// connects to every lower rank and accepts every higher one, so each pair
// gets exactly one connection without any coordination beyond the address
// list. A connection is admitted only after a hello with the right magic,
// version and world size and a challenge-response that proves both sides
// hold the token (transport/wire/auth.h); anything else is turned away, as is a connection
// that does not authenticate within its hello deadline or the oldest one
// when too many are pending, and the endpoint keeps waiting for the real
// peer until the deadline.
#pragma once

// Boost 1.74's asio/awaitable.hpp uses std::exchange without including it.
#include <utility>

#include <boost/asio.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace gradex::tcp {

using Socket = boost::asio::ip::tcp::socket;

struct MeshRequest {
  int rank = 0;
  int size = 1;
  std::vector<std::string> addresses;  // "host:port" of every rank
  std::string token;
  std::chrono::steady_clock::time_point deadline;
  std::chrono::milliseconds timeout{30'000};  // the run's, bounds the hello deadline
};

// Returns one connected socket per peer (nullptr at `rank`). Runs `io` (the
// acceptor's) on the calling thread until done; handlers still queued on it
// afterwards point at freed state, so `io` must never run again: the caller
// moves the sockets to another io_context and destroys this one. Throws TimeoutError naming the ranks that
// never arrived (and why connections were refused), or Error when a peer
// refuses this rank (token or world size mismatch).
std::vector<std::unique_ptr<Socket>> build_mesh(boost::asio::io_context& io,
                                                boost::asio::ip::tcp::acceptor& acceptor,
                                                const MeshRequest& request);

// Splits "host:port"; throws ConfigError naming `field` when malformed.
std::pair<std::string, std::string> split_address(const std::string& address,
                                                  const std::string& field);

}  // namespace gradex::tcp
