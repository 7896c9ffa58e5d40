#include "runner/measure_sim.h"

#include "runner/simulate.h"

namespace gradex {

Measurement measure_simulated(Scheme& scheme, const MeasureRequest& request,
                              const Topology& topology, int represents,
                              const Topology* whole) {
  sim::SimRequest sim;
  sim.collective = request.collective;
  sim.count = request.count;
  sim.dtype = request.dtype;
  sim.op = request.op;
  sim.topology = topology;
  sim.phantom = true;
  sim.straggler_ms = request.straggler_ms;
  sim.represents = represents;
  sim.whole = whole;
  const sim::SimResult r = sim::simulate_allreduce(scheme, sim);
  Measurement m;
  m.checked = false;  // phantom buffers
  m.simulated = true;
  m.seconds = {r.seconds};
  m.traffic = r.traffic;
  m.engine = r.stats;
  if (represents > 0) m.subset = topology.endpoints();
  return m;
}

}  // namespace gradex
