// A Chrome trace (chrome://tracing, Perfetto) of a training run: one
// process per rank, a compute track (forward+backward, optimizer step) and a
// communication track (one span per bucket exchange), so bucket exchanges
// can be seen running under the backward pass.
#pragma once

#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

namespace gradex {

struct TraceEvent {
  std::string name;
  int rank = 0;
  int track = 0;  // 0 compute, 1 communication
  double start = 0;  // seconds on the wall clock
  double duration = 0;
};

class Trace {
 public:
  void add(TraceEvent e);
  std::vector<TraceEvent> events() const;
  // Writes the JSON trace (times relative to the earliest event, in us).
  void write(const std::filesystem::path& path) const;

 private:
  mutable std::mutex mutex_;
  std::vector<TraceEvent> events_;
};

}  // namespace gradex
