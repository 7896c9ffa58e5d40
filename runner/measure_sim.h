// The simulated counterpart of measure(): one all-reduce on a virtual clock
// with phantom buffers (runner/simulate.h), reported as a Measurement so that
// tables, CSV and JSON are the same for every transport. The simulator is
// deterministic, so every "iteration" would be the same: there is one.
// Phantom buffers hold no values, so #wrong is not checked (reported 0).
#pragma once

#include "common/scheme.h"
#include "common/topology.h"
#include "runner/measure.h"

namespace gradex {

// `topology` is what is simulated: every endpoint, or a symmetric subset of
// them standing for all `represents` of `whole` (runner/simulate.h; 0: no
// subset, and `whole`, if given, is `topology` as the caller holds it).
Measurement measure_simulated(Scheme& scheme, const MeasureRequest& request,
                              const Topology& topology, int represents,
                              const Topology* whole = nullptr);

}  // namespace gradex
