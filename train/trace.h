// A Chrome trace (chrome://tracing, Perfetto) of a training run: one
// process per rank, a compute track (forward+backward, optimizer step) and a
// communication track (one span per bucket exchange), so bucket exchanges
// can be seen running under the backward pass.
#pragma once

#include <cstddef>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "common/comm.h"

namespace gradex {

struct TraceEvent {
  std::string name;
  int rank = 0;
  int track = 0;  // 0 compute, 1 communication
  double start = 0;  // seconds on the wall clock
  double duration = 0;
  // A bucket exchange's index and bytes as exchanged, written as the
  // event's args so that tools can filter and sum them (bucket -1: none).
  int bucket = -1;
  std::size_t bytes = 0;
};

class Trace {
 public:
  void add(TraceEvent e);
  std::vector<TraceEvent> events() const;
  // The JSON trace (times relative to the earliest event, in us), written
  // by the caller together with the run's other files, all or none.
  std::string json_text() const;

 private:
  mutable std::mutex mutex_;
  std::vector<TraceEvent> events_;
};

// A launched run: every process recorded its own ranks; rank 0 of `comm`
// collects the others' events into `trace` (the same steady clock on one
// machine, so the timelines line up). Called by every rank of `comm`.
void gather_trace(Comm& comm, Trace& trace);

}  // namespace gradex
