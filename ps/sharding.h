// Who owns which part of the gradient, and where each server runs.
//
// As in ps-lite, the key space (here: element indices 0..count-1) is cut
// into one contiguous range per server, of nearly equal size, so every
// server carries the same share of the traffic. A server is a role, not a
// process: it runs on a dedicated endpoint of its own (after the workers)
// or alongside a worker (co-located), as DataParallel's master GPU does.
#pragma once

#include <cstddef>
#include <vector>

#include "common/scheme.h"

namespace gradex {

// Elements [offset, offset + count) of the gradient.
struct KeyRange {
  std::size_t offset = 0;
  std::size_t count = 0;
};

// The range server `server` (of `servers`) owns in a gradient of `count`
// elements. Sizes differ by at most one element; with count < servers the
// last servers own nothing.
KeyRange shard_range(std::size_t count, int servers, int server);

// Pipelining (BytePS's tensor partitioning, ps-lite's key slicing): a shard
// moves as consecutive chunks of at most `chunk` elements, so a server can
// sum and return chunk j while chunk j+1 is still being pushed, and both
// directions of every NIC carry data at once. All chunks of a shard travel
// under the shard's tags: every transport keeps the messages of one (peer,
// tag) in order, so the j-th chunk sent matches the j-th receive posted.
// `chunk` 0 sends the whole shard as one message (push, then pull).
std::size_t chunk_count(std::size_t shard_count, std::size_t chunk);
// Chunk j of `shard`, as a range of the whole gradient.
KeyRange chunk_range(KeyRange shard, std::size_t chunk, std::size_t j);

// Where the servers of one parameter-server group run.
class ServerLayout {
 public:
  // `servers` is the number of servers for dedicated and co-located
  // placement, and the number of dedicated servers beside the workers'
  // own for hybrid. Throws ConfigError unless workers >= 1 and there is
  // at least one server (hybrid always has the workers').
  ServerLayout(int workers, int servers, ServerPlacement placement);

  int workers() const { return workers_; }
  // Server roles in all: hybrid counts the workers' own.
  int servers() const { return servers_; }
  // Servers on endpoints of their own.
  int dedicated() const;
  ServerPlacement placement() const { return placement_; }
  // Endpoints of the group: the workers, plus the dedicated servers.
  int endpoints() const;
  // The endpoint that runs server k. Dedicated: workers + k. Co-located:
  // worker k * workers / servers, which spreads the servers evenly (one
  // per worker at most while servers <= workers; several per worker after).
  // Hybrid: servers 0..workers-1 on the workers, the rest after them.
  int host(int server) const;
  // The servers `endpoint` runs, ascending (empty for most workers).
  std::vector<int> hosted_on(int endpoint) const;
  // The order a worker visits the servers in each chunk round: worker w
  // starts at server w mod servers, so the workers' first chunks spread
  // over the servers' NICs instead of converging on server 0's. A server
  // takes its workers in the order their chunks reach it so
  // (push_pull_round.cpp): at step s the workers w = k - s (mod servers).
  int server_at(int worker, int step) const { return (step + worker) % servers_; }
  // The key range server k owns in a gradient of `count` elements: equal
  // shards, except hybrid, whose workers' servers share hybrid_share() of
  // the keys and the dedicated ones the rest.
  KeyRange shard(std::size_t count, int server) const;
  // BytePS's optimum (OSDI 2020, Theorem 1) for n workers and k dedicated
  // servers: a worker's NIC carries 2 (n-1)/n x S + (1-x) S each way and a
  // dedicated server's n (1-x) S / k; they are equal when the workers'
  // servers hold x = n (n-k) / (n^2 + k n - 2k) of the keys (0 once k >= n),
  // and the time is then 2 n (n-1) S / ((n^2 + k n - 2k) B): the ring's
  // 2 (n-1)/n S/B at k = 0, S/B at k = n.
  double hybrid_share() const;
  // Hybrid: the keys [0, colocated_keys) the workers' own servers share,
  // one block each (BlockSplit, as shard() cuts them); 0 otherwise.
  std::size_t colocated_keys(std::size_t count) const;

 private:
  int workers_;
  int servers_;
  ServerPlacement placement_;
};

}  // namespace gradex
