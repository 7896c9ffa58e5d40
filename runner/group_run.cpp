#include "runner/group_run.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>

#include "common/debug_log.h"
#include "common/errors.h"
#include "runner/machine.h"
#include "runner/execute.h"
#include "runner/measure_group.h"

namespace gradex {

std::string describe_group_ranks(Comm& comm) {
  // Each rank's pid and host name in a record of fixed size.
  struct Place {
    std::int64_t pid = 0;
    char host[64] = {};
  };
  Place mine;
  mine.pid = ::getpid();
  const std::string host = host_name();
  host.copy(mine.host, sizeof mine.host - 1);
  if (comm.rank() != 0) {
    comm.send(0, &mine, sizeof mine, kRankListTag);
    return {};
  }
  std::vector<Place> all(static_cast<std::size_t>(comm.size()));
  all[0] = mine;
  std::vector<Request> pending;
  for (int r = 1; r < comm.size(); ++r) {
    pending.push_back(comm.irecv(r, &all[static_cast<std::size_t>(r)], sizeof(Place), kRankListTag));
  }
  comm.wait_all(pending);
  std::string lines;
  for (int r = 0; r < comm.size(); ++r) {
    const Place& p = all[static_cast<std::size_t>(r)];
    char line[128];
    std::snprintf(line, sizeof line, "#  rank %3d pid %7lld on %s\n", r,
                  static_cast<long long>(p.pid), p.host);
    lines += line;
  }
  return lines;
}

int group_size(const RunPlan& plan) {
  int n = 1;
  for (const PlannedRun& run : plan.runs) n = std::max(n, run.instance->endpoints());
  const Scenario& sc = plan.scenario;
  if (sc.training && !sc.training->consistency.empty()) {
    for (int workers : sc.workers) n = std::max(n, workers + sc.ps_servers);
  }
  return n;
}

std::optional<Topology> group_shaping(const Scenario& sc, Topology shaping, int group_size) {
  if (!sc.network.shaped) return std::nullopt;
  // Idle endpoints get nodes of their own: they move nothing anyway.
  int next_node = shaping.node_of.empty()
                      ? 0
                      : *std::max_element(shaping.node_of.begin(), shaping.node_of.end()) + 1;
  while (shaping.endpoints() < group_size) shaping.node_of.push_back(next_node++);
  return shaping;
}

std::vector<ResultRow> execute_plan_on_group(
    const RunPlan& plan, Comm& comm,
    const std::function<void(const std::optional<Topology>&)>& reshape,
    const std::function<void(const PlannedRun&, const ResultRow&)>& on_row) {
  const Scenario& sc = plan.scenario;
  GRADEX_ENFORCE_EQ(comm.size(), group_size(plan), "launched group size");
  std::vector<ResultRow> rows;
  for (std::size_t i = 0; i < plan.runs.size(); ++i) {
    const PlannedRun& run = plan.runs[i];
    Scheme& scheme = *run.instance;
    const int endpoints = scheme.endpoints();
    const Topology topo = scenario_topology(sc, scheme, run.workers);
    const std::optional<Topology> shaping = group_shaping(sc, topo, comm.size());
    // Nobody sends under the new model before everybody installed it.
    comm.barrier();
    reshape(shaping);
    comm.barrier();
    // Endpoints the scheme does not use (a PS's servers while a ring runs)
    // sit the run out, but meet the others after every size: a wait of
    // theirs then lasts one size's iterations, not the whole run, which may
    // take longer than the timeout that bounds every wait.
    const bool member = comm.rank() < endpoints;
    std::optional<SubComm> group;
    if (member) {
      group.emplace(comm, GroupMembers::rule(endpoints, 0, 1),
                    static_cast<std::uint32_t>(i % kSubCommSpaces));
    }
    // The group's endpoints carry the messages: its transport settings
    // were applied when it formed.
    MeasureRequest req = measure_request(sc);
    for (std::size_t bytes : sc.sizes) {
      req.count = bytes / dtype_size(sc.dtype);
      if (member) {
        GRADEX_DEBUG_LOG("rank ", comm.rank(), ": ", run.scheme, " on ", run.workers, " workers, ",
                         bytes, " bytes: starting");
        const Measurement m = measure_group(*group, scheme, req);
        GRADEX_DEBUG_LOG("rank ", comm.rank(), ": ", run.scheme, " at ", bytes, " bytes: done");
        if (comm.rank() == 0) {
          ResultRow row = result_row(sc, run, req.count, m, topo);
          on_row(run, row);
          rows.push_back(std::move(row));
        }
      }
      comm.barrier();
    }
  }
  return rows;
}

}  // namespace gradex
