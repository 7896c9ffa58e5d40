#include "ps/server.h"

#include "common/errors.h"

namespace gradex {

std::byte* ServerMemory::accumulator(int server, std::size_t bytes) {
  GRADEX_ENFORCE(server >= 0 && static_cast<std::size_t>(server) < buffers_.size(), "server ",
                 server);
  Buffer& b = buffers_[static_cast<std::size_t>(server)];
  if (b.bytes < bytes) {
    b.data.reset(new std::byte[bytes]);  // default-initialised: not zeroed
    b.bytes = bytes;
  }
  return b.data.get();
}

}  // namespace gradex
