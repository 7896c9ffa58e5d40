// The processes a training run leaves idle (a PS's servers while a ring
// trains, the ranks past a smaller worker count) wait for it in steps of
// an epoch. Rank 0, which takes part in every run, tells each of them when
// it has scored an epoch and once more when the run has ended, so that no
// wait of theirs lasts longer than an epoch: every wait is bounded by the
// transport's timeout, and one wait for the whole run would need a timeout
// as long as the run.
#pragma once

#include <vector>

#include "common/comm.h"

namespace gradex {

class IdleRanks {
 public:
  // The run uses ranks 0 .. endpoints - 1 of `comm`; the others are idle.
  IdleRanks(Comm& comm, int endpoints);
  IdleRanks(const IdleRanks&) = delete;
  IdleRanks& operator=(const IdleRanks&) = delete;

  bool idle() const { return comm_.rank() >= endpoints_; }
  // On rank 0 (elsewhere nothing): an epoch was scored.
  void epoch_ended();
  // On rank 0 (elsewhere nothing): the run has ended; returns once every
  // idle rank has taken its messages.
  void run_ended();
  // On an idle rank: returns when rank 0 says the run has ended.
  void sit_out();

 private:
  void tell_all(const char* what);

  Comm& comm_;
  int endpoints_;
  std::vector<Request> told_;
};

}  // namespace gradex
