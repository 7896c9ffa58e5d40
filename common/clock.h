// Time sources. Transports report time through a Clock so that the same
// algorithm code can run on wall time or on a simulator's virtual time.
#pragma once

#include <string>

namespace gradex {

class Clock {
 public:
  virtual ~Clock() = default;
  // Seconds since an arbitrary, fixed origin.
  virtual double now() const = 0;
  // Blocks the calling rank until now() >= t (returns at once if already past).
  virtual void sleep_until(double t) = 0;
  // True for a simulator's clock, which moves only when ranks wait: work a
  // rank does between waits takes no time on it (train/rank_time.h).
  virtual bool is_virtual() const { return false; }
};

// The steady wall clock of this process.
class WallClock final : public Clock {
 public:
  double now() const override;
  void sleep_until(double t) override;
};

WallClock& wall_clock();

// Sleeps on the wall clock until `t`, but never past `deadline` (both in
// wall_clock() seconds). Returns whether `t` was reached: false means the
// deadline came first and the caller's wait has timed out. A shaped message
// due long after the wait's timeout (a link of 100 B/s) thus fails the wait
// at its deadline instead of sleeping for as long as the model says.
bool sleep_until_by(double t, double deadline);

// Why a wait whose message was due at `due` gave up at the deadline: for
// the timeout text, "the shaped link delivers it 41.0 s after the wait began".
std::string shaped_delay_note(double due, double wait_start);

}  // namespace gradex
