// Timing one scheme at one message size from inside each rank (a thread of
// any world, or a process of a launched run): measure_rank's warm-up, timed
// iterations and checks, with the per-rank figures gathered to rank 0 over
// the group itself.
#pragma once

#include "common/comm.h"
#include "common/scheme.h"
#include "runner/measure.h"

namespace gradex {

// Called by every endpoint of `comm` (comm.size() == scheme.endpoints()).
// Rank 0 returns the group's Measurement; the others return their own
// share (their timings and traffic only).
Measurement measure_group(Comm& comm, Scheme& scheme, const MeasureRequest& request);

}  // namespace gradex
