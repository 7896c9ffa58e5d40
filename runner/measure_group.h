// Timing one scheme at one message size when every endpoint is driven by its
// own caller (a process of a launched run, or a thread holding a TCP
// endpoint): the same warm-up, timed iterations and checks as measure(),
// with the per-rank figures gathered to rank 0 over the group itself.
#pragma once

#include <string>

#include "common/comm.h"
#include "common/scheme.h"
#include "runner/measure.h"

namespace gradex {

// Called by every endpoint of `comm` (comm.size() == scheme.endpoints()).
// Rank 0 returns the group's Measurement; the others return their own
// share (their timings and traffic only).
Measurement measure_group(Comm& comm, Scheme& scheme, const MeasureRequest& request);

// `gradex run` with a process transport ("tcp", "zmq"): the same
// measurement with every rank a thread of this process holding its own
// loopback endpoint (timeout and shaping from request.transport).
Measurement measure_endpoint_threads(const std::string& transport, Scheme& scheme,
                                     const MeasureRequest& request);

}  // namespace gradex
