// A server's memory. The server role itself runs in push_pull_round.h.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace gradex {

// The servers' accumulators, one per server, kept from round to round as a
// server process keeps its memory: a timed round then neither allocates
// nor zero-fills (nor, for large shards, faults in fresh pages). Server k's
// buffer is only ever used by the one endpoint that hosts k, so endpoints
// on threads or fibers of one process never share a buffer.
class ServerMemory {
 public:
  explicit ServerMemory(int servers) : buffers_(static_cast<std::size_t>(servers)) {}
  // At least `bytes` of server `server`'s memory; contents undefined.
  std::byte* accumulator(int server, std::size_t bytes);

 private:
  struct Buffer {
    std::unique_ptr<std::byte[]> data;
    std::size_t bytes = 0;
  };
  std::vector<Buffer> buffers_;
};

}  // namespace gradex
