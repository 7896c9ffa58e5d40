#include "runner/simulate.h"

#include <algorithm>
#include <chrono>

#include "common/errors.h"
#include "common/straggler.h"
#include "common/verify.h"

namespace gradex::sim {

SimResult simulate_allreduce(Scheme& scheme, const SimRequest& request) {
  const int endpoints = scheme.endpoints();
  const int workers = scheme.workers();
  GRADEX_ENFORCE_EQ(request.topology.endpoints(), endpoints, "simulated topology size");
  const auto wall_start = std::chrono::steady_clock::now();
  TransportOptions options;
  options.shaping = request.topology;
  options.phantom_payloads = request.phantom;
  SimWorld world(endpoints, options);

  SimResult result;
  result.traffic.resize(static_cast<std::size_t>(endpoints));
  const double start = world.now();
  world.run([&](Comm& comm) {
    const int r = comm.rank();
    const bool real = !request.phantom && r < workers;
    std::vector<std::byte> storage(real ? request.count * dtype_size(request.dtype) : 0);
    const Tensor data{real ? storage.data() : nullptr, request.count, request.dtype};
    if (real) fill_collective_input(request.collective, data, r, workers);
    straggle(comm, workers, request.straggler_ms);
    scheme.run(comm, request.collective, data, request.op);
    // Fibers run one at a time: no lock needed to merge.
    if (r < workers) result.seconds = std::max(result.seconds, comm.clock().now() - start);
    if (real) result.wrong += count_wrong_collective(request.collective, data, r, workers, request.op);
    result.traffic[static_cast<std::size_t>(r)] = comm.traffic();
  });
  result.stats = world.stats();
  result.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

}  // namespace gradex::sim
