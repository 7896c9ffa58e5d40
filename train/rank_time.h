// A worker's stretches of compute, on whatever clock its transport keeps.
//
// On a wall clock compute takes the time it takes. On a simulator's virtual
// clock every rank is a fiber of one thread, and the virtual time moves only
// while ranks wait, so a forward pass would take no time at all. There each
// stretch of compute is timed on the wall clock and charged to the rank: it
// sleeps that long in virtual time (as SimGrid's SMPI benchmarks compute and
// injects it), while the network and the other ranks go on. A fiber is
// never pre-empted, so the wall time measured is this rank's compute alone.
//
// An emulated model (train/profiled_model.h) knows how long its compute
// takes and says so with pass_until(): on a wall clock the thread sleeps
// that long; on a virtual clock the stretch is charged exactly that, none
// of the host's own time (its scheduling noise is not the model's), so a
// simulated emulated run is the same run every time.
#pragma once

#include "common/clock.h"

namespace gradex {

class RankTime {
 public:
  explicit RankTime(Clock& clock) : clock_(clock) {}

  Clock& clock() const { return clock_; }
  bool is_virtual() const { return clock_.is_virtual(); }

  // Starts a stretch of compute; returns its start on the rank's clock.
  double begin();
  // Seconds the current stretch has computed so far.
  double elapsed() const;
  // Lets the current stretch last until `seconds` after its start (see
  // above); later calls must not go back in time.
  void pass_until(double seconds);
  // Leaves out of the current stretch `seconds` it spent not computing:
  // on a wall clock waiting (for ZeRO-3's gathers), so later pass_until()
  // deadlines move by as much; on a virtual clock wall time this rank's
  // fiber spent running an exchange (train/reducer.h), which is not compute.
  // elapsed() no longer counts them. Nothing outside a stretch.
  void exclude(double seconds);
  // Virtual clocks: the compute cannot go on before `at` on the rank's clock
  // (it needs a layer gathered by then), so the stretch stands still until
  // then: it moves later by what is missing, which elapsed() does not count,
  // and later pass_until() deadlines move by as much. Returns the seconds it
  // stood still; 0 outside a stretch.
  double stall_until(double at);
  // Whether a stretch is open (begun and not ended).
  bool computing() const { return open_; }
  // Where the open stretch's compute has got to on the rank's clock.
  double position() const { return start_ + elapsed(); }
  // Ends the stretch and returns its end on the rank's clock: on a virtual
  // clock the rank first sleeps until position().
  double end();

 private:
  Clock& clock_;
  double start_ = 0;       // on clock_
  double wall_start_ = 0;  // on the wall clock (virtual clocks only)
  double declared_ = -1;   // pass_until()'s last time; < 0: none this stretch
  bool open_ = false;
};

}  // namespace gradex
