// Time sources. Transports report time through a Clock so that the same
// algorithm code can run on wall time or on a simulator's virtual time.
#pragma once

namespace gradex {

class Clock {
 public:
  virtual ~Clock() = default;
  // Seconds since an arbitrary, fixed origin.
  virtual double now() const = 0;
  // Blocks the calling rank until now() >= t (returns at once if already past).
  virtual void sleep_until(double t) = 0;
};

// The steady wall clock of this process.
class WallClock final : public Clock {
 public:
  double now() const override;
  void sleep_until(double t) override;
};

WallClock& wall_clock();

}  // namespace gradex
