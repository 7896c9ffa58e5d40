// Running a plan when every endpoint is a separate process (a launched run):
// the group holds as many endpoints as the largest run needs (a dedicated
// PS adds its servers to the workers); each run uses the first
// scheme.endpoints() of them as a sub-group while the rest wait at the next
// run's barrier. Rank 0 gets the rows; the others get none.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/comm.h"
#include "common/topology.h"
#include "runner/execute.h"

namespace gradex {

// Endpoints the group needs for every run of `plan`.
// One line per rank of a launched group, as nccl-tests lists its devices:
// "#  rank   0 pid 1234 on host-a". Every rank calls it; rank 0 gets the
// lines, the others an empty string.
std::string describe_group_ranks(Comm& comm);

// Endpoints a launched group needs: the largest run's (PS consistency
// training: the most workers plus the servers).
int group_size(const RunPlan& plan);

// A run's `topology` (config/scenario.h: scenario_topology) as the
// shaping of a group of `group_size` endpoints (idle endpoints get nodes
// of their own); nullopt when unshaped.
std::optional<Topology> group_shaping(const Scenario& scenario, Topology topology, int group_size);

// Called by every endpoint of `comm`. `reshape` installs each run's shaping
// topology (covering all comm.size() endpoints) on this endpoint while the
// group is quiescent; it gets nullopt for an unshaped network.
std::vector<ResultRow> execute_plan_on_group(
    const RunPlan& plan, Comm& comm,
    const std::function<void(const std::optional<Topology>&)>& reshape,
    const std::function<void(const PlannedRun&, const ResultRow&)>& on_row);

}  // namespace gradex
