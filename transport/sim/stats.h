// What one simulation cost the engine: deterministic counts (the same on
// every machine and every run), so they compare schemes' engine costs where
// wall time on a noisy machine cannot. `gradex simulate` prints them and
// writes them to results.json ("engine").
#pragma once

#include <cstdint>

namespace gradex::sim {

struct SimStats {
  std::uint64_t events = 0;         // network and timer events processed
  std::uint64_t messages = 0;       // sends posted
  std::uint64_t context_switches = 0;
  // The most operations (posted sends and receives) open at once: what a
  // scheme holds live, which bounded posting keeps independent of the
  // buffer's length.
  std::uint64_t peak_operations = 0;
};

}  // namespace gradex::sim
