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
  // Throws ConfigError unless workers >= 1 and servers >= 1.
  ServerLayout(int workers, int servers, ServerPlacement placement);

  int workers() const { return workers_; }
  int servers() const { return servers_; }
  ServerPlacement placement() const { return placement_; }
  // Endpoints of the group: the workers, plus one per server if dedicated.
  int endpoints() const;
  // The endpoint that runs server k. Dedicated: workers + k. Co-located:
  // worker k * workers / servers, which spreads the servers evenly (one
  // per worker at most while servers <= workers; several per worker after).
  int host(int server) const;
  // The servers `endpoint` runs, ascending (empty for most workers).
  std::vector<int> hosted_on(int endpoint) const;

 private:
  int workers_;
  int servers_;
  ServerPlacement placement_;
};

}  // namespace gradex
