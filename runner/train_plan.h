// `gradex run` and `gradex launch` of a scenario whose workload is "train":
// the training loop for every (workers, scheme) of the plan (or every
// (workers, consistency model) of PS training), printed and written as
// `gradex train` does, with the scenario embedded in results.json.
#pragma once

#include <ostream>
#include <string>

#include "transport/group_endpoint.h"
#include "runner/plan.h"
#include "train/train_job.h"

namespace gradex {

// The header both commands print first.
void print_train_preamble(std::ostream& out, const Scenario& scenario, const TrainJob& job);

// Every rank a thread of this process (the scenario's transport: inproc, or
// loopback tcp/zmq endpoints). Returns the exit code.
int run_train_plan(const RunPlan& plan, const TrainJob& job, std::ostream& out);

// Called by every process of a launched group (comm.size() == group_size(plan));
// `reshape` installs a run's shaping on this endpoint. Rank 0 prints and
// writes and returns the exit code; the others return kExitOk.
int run_train_plan_on_group(const RunPlan& plan, const TrainJob& job, Comm& comm,
                            const std::function<void(const std::optional<Topology>&)>& reshape,
                            std::ostream& out);

}  // namespace gradex
