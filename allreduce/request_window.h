// A stream of sends (or receives) kept open at most a fixed number at a
// time: what bounds a pipelined scheme's live requests by its window
// instead of by the buffer's length (NCCL keeps 8 slots per connection).
#pragma once

#include <cstddef>
#include <deque>
#include <utility>

#include "common/comm.h"

namespace gradex {

// Segments a pipelined stream keeps in flight: posted ahead of the one
// being waited for, or left open behind it.
inline constexpr std::size_t kSegmentsAhead = 8;

class RequestWindow {
 public:
  explicit RequestWindow(std::size_t limit) : limit_(limit) {}

  // Opens `request`, first waiting for the oldest while `limit` are open.
  void push(Comm& comm, Request request) {
    while (open_.size() >= limit_) wait_oldest(comm);
    open_.push_back(std::move(request));
  }
  // Waits for the oldest open request and closes it.
  void wait_oldest(Comm& comm) {
    comm.wait(open_.front());
    open_.pop_front();
  }
  // Waits for every open request.
  void drain(Comm& comm) {
    for (Request& r : open_) comm.wait(r);
    open_.clear();
  }

 private:
  std::size_t limit_;
  std::deque<Request> open_;
};

}  // namespace gradex
