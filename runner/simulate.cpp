#include "runner/simulate.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <vector>

#include "common/errors.h"
#include "common/straggler.h"
#include "common/verify.h"

namespace gradex::sim {

namespace {

// Rank i of the whole group is simulated rank i mod `simulated`.
std::vector<int> periodic_members(int ranks, int simulated) {
  std::vector<int> members(static_cast<std::size_t>(ranks));
  for (int i = 0; i < ranks; ++i) members[static_cast<std::size_t>(i)] = i % simulated;
  return members;
}

}  // namespace

SimResult simulate_allreduce(Scheme& scheme, const SimRequest& request) {
  const int endpoints = scheme.endpoints();
  const int workers = scheme.workers();
  const int simulated = request.topology.endpoints();
  const bool subset = request.represents > 0;
  GRADEX_ENFORCE_EQ(subset ? request.represents : simulated, endpoints,
                    "simulated topology size");
  GRADEX_ENFORCE(!subset || (request.phantom && endpoints % simulated == 0 &&
                             request.straggler_ms == 0 && request.whole != nullptr),
                 "a symmetric subset needs phantom buffers, no straggler, a whole number "
                 "of subsets in the group, and the whole network");
  const auto wall_start = std::chrono::steady_clock::now();
  TransportOptions options;
  options.shaping = request.topology;
  options.phantom_payloads = request.phantom;
  SimWorld world(simulated, options);
  const std::vector<int> members = subset ? periodic_members(endpoints, simulated)
                                          : std::vector<int>{};

  SimResult result;
  result.traffic.resize(static_cast<std::size_t>(endpoints));
  const double start = world.now();
  world.run([&](Comm& simulated_comm) {
    // A subset's ranks see the whole group through a view whose peers wrap
    // round the subset; the view's traffic is counted on the simulated rank.
    std::optional<SubComm> view;
    if (subset) view.emplace(simulated_comm, members, 0);
    Comm& comm = view ? static_cast<Comm&>(*view) : simulated_comm;
    const int r = comm.rank();
    const bool real = !request.phantom && r < workers;
    std::vector<std::byte> storage(real ? request.count * dtype_size(request.dtype) : 0);
    const Tensor data{real ? storage.data() : nullptr, request.count, request.dtype};
    if (real) fill_collective_input(request.collective, data, r, workers);
    straggle(comm, workers, request.straggler_ms);
    scheme.run(comm, request.collective, data, request.op, request.whole);
    // Fibers run one at a time: no lock needed to merge.
    if (r < workers) result.seconds = std::max(result.seconds, comm.clock().now() - start);
    if (real) result.wrong += count_wrong_collective(request.collective, data, r, workers, request.op);
    result.traffic[static_cast<std::size_t>(r)] = simulated_comm.traffic();
  });
  // Every rank a simulated one stands for moved what it moved.
  for (int e = simulated; subset && e < endpoints; ++e) {
    result.traffic[static_cast<std::size_t>(e)] =
        result.traffic[static_cast<std::size_t>(e % simulated)];
  }
  result.stats = world.stats();
  result.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

}  // namespace gradex::sim
