// A straggler: the last worker of a group starts each iteration (each
// training step) late, as a slow or busy machine would. It waits on its
// rank's clock, so on the simulator the delay is virtual time and costs
// nothing real. Every scheme and every training loop calls this one
// function at the start of its step.
#pragma once

#include "common/comm.h"

namespace gradex {

// On worker `workers - 1` of `comm`: waits `ms` milliseconds. Elsewhere, or
// for ms <= 0: returns at once.
void straggle(Comm& comm, int workers, double ms);

}  // namespace gradex
