#include "runner/train_plan.h"

#include <optional>
#include <set>

#include "runner/exit_codes.h"
#include "runner/machine.h"
#include "runner/train_output.h"
#include "common/errors.h"
#include "common/units.h"
#include "runner/group_run.h"
#include "runner/idle_ranks.h"
#include "schemes/registry.h"

namespace gradex {

namespace {

TrainOutputs outputs_of(const Scenario& sc, const TrainJob& job, const Trace& trace) {
  TrainOutputs w;
  w.config = job.config_json();
  w.config["workers"] = sc.workers;
  w.config["transport"] = sc.transport;
  w.scenario = &sc;
  w.folder = sc.output;
  // PS consistency training records no timeline.
  if (job.workload().consistency.empty()) w.trace = &trace;
  w.trace_path = job.workload().trace;
  return w;
}

// The (workers, consistency model) runs of PS training, in plan order.
struct ConsistencyRun {
  int workers = 0;
  Consistency consistency = Consistency::bsp;
  std::string label;
};

std::vector<ConsistencyRun> consistency_runs(const Scenario& sc, const TrainJob& job) {
  std::vector<ConsistencyRun> runs;
  for (int workers : sc.workers) {
    for (const std::string& name : job.workload().consistency) {
      const Consistency c = parse_consistency(name, "/workload/consistency");
      runs.push_back({workers, c, consistency_label(c, job.workload().staleness)});
    }
  }
  return runs;
}

void print_consistency_header(std::ostream& out, const Scenario& sc, const ConsistencyRun& run) {
  out << "#\n# parameter server, " << run.label << ", " << sc.ps_servers << " server(s), "
      << run.workers << " workers\n" << std::flush;
}

void record_consistency(const ConsistencyRun& run, const Scenario& sc, PsTrainResult r,
                        TrainOutcome& o) {
  o.staleness_table += staleness_row(run.label, sc.ps_servers, r);
  o.staleness.push_back(staleness_json(run.label, r));
  o.staleness.back()["workers"] = run.workers;
  o.runs.push_back({"ps_" + run.label, run.workers, std::move(r.train)});
}

// PS training through servers that run the optimizer, every rank a thread
// of this process over the scenario's transport.
void run_consistency(const Scenario& sc, const TrainJob& job, std::ostream& out, TrainOutcome& o) {
  for (const ConsistencyRun& run : consistency_runs(sc, job)) {
    print_consistency_header(out, sc, run);
    RankTransport transport{sc.transport, TransportOptions{sc.timeout, std::nullopt, sc.spin}};
    const int endpoints = run.workers + sc.ps_servers;
    if (sc.network.shaped) transport.options.shaping = scenario_topology(sc, run.workers, endpoints);
    PsTrainResult r = job.train_parameter_server(
        run.consistency, run.workers, sc.ps_servers, transport,
        [&](const EpochRecord& e) { print_epoch(out, run.label, e); });
    record_consistency(run, sc, std::move(r), o);
  }
}

// The same on a launched group: one process per endpoint.
void run_consistency_on_group(const Scenario& sc, const TrainJob& job, Comm& comm,
                              const std::function<void(const std::optional<Topology>&)>& reshape,
                              std::ostream& out, TrainOutcome& o) {
  const bool printing = comm.rank() == 0;
  const std::vector<ConsistencyRun> runs = consistency_runs(sc, job);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const ConsistencyRun& run = runs[i];
    const int endpoints = run.workers + sc.ps_servers;
    comm.barrier();
    reshape(group_shaping(sc, scenario_topology(sc, run.workers, endpoints), comm.size()));
    comm.barrier();
    // A launched run has one worker count, and every one of its
    // consistency runs all of its endpoints: none sits one out.
    if (comm.rank() >= endpoints) continue;
    if (printing) print_consistency_header(out, sc, run);
    SubComm group(comm, GroupMembers::rule(endpoints, 0, 1),
                  static_cast<std::uint32_t>(i % kSubCommSpaces));
    EpochCallback on_epoch;
    if (printing) on_epoch = [&](const EpochRecord& e) { print_epoch(out, run.label, e); };
    PsTrainResult r = ps_train_rank(group, job.ps_config(run.consistency, sc.ps_servers),
                                    job.config(), job.source(run.workers), run.workers, on_epoch);
    if (printing) record_consistency(run, sc, std::move(r), o);
  }
}

// ZeRO needs every planned scheme to shard (shards_training), checked
// before any run starts.
void check_zero_schemes(const RunPlan& plan, const TrainJob& job) {
  for (const PlannedRun& run : plan.runs) {
    check_zero(job.config().zero, *run.instance, run.scheme, workload_pointer()("zero"));
  }
}

void print_train_run_header(std::ostream& out, const PlannedRun& run, const TrainConfig& config) {
  out << "#\n# " << run_label(run.scheme, config) << ", " << run.workers << " workers, "
      << run.instance->endpoints() << " endpoints\n" << std::flush;
}

// The workload's no-sync baselines: one per worker count, over the first
// run planned with that count (whose scheme then only broadcasts the
// initial parameters). Indexes into plan.runs.
std::vector<std::size_t> no_sync_baselines(const RunPlan& plan, const TrainJob& job) {
  std::vector<std::size_t> firsts;
  if (!job.workload().no_sync_baseline) return firsts;
  std::set<int> seen;
  for (std::size_t i = 0; i < plan.runs.size(); ++i) {
    if (seen.insert(plan.runs[i].workers).second) firsts.push_back(i);
  }
  return firsts;
}

void print_no_sync_header(std::ostream& out, const PlannedRun& run) {
  out << "#\n# " << kNoSyncRun << " baseline (exchange skipped), " << run.workers
      << " workers\n" << std::flush;
}

RankTransport rank_transport(const Scenario& sc, const PlannedRun& run) {
  RankTransport transport{sc.transport, TransportOptions{sc.timeout, std::nullopt, sc.spin}};
  if (sc.network.shaped) {
    transport.options.shaping = scenario_topology(sc, *run.instance, run.workers);
  }
  return transport;
}

// One run on a launched group: its shaping installed everywhere, then its
// endpoints train in a sub-group on tag space `space`. nullopt on the
// processes idle in it, which wait for it an epoch at a time.
std::optional<TrainResult> train_on_group(
    const Scenario& sc, Comm& comm,
    const std::function<void(const std::optional<Topology>&)>& reshape, const PlannedRun& run,
    std::size_t space, const TrainConfig& config, const ModelSource& source, Trace* trace,
    const EpochCallback& on_epoch) {
  // Nobody sends under the new model before everybody installed it.
  comm.barrier();
  reshape(group_shaping(sc, scenario_topology(sc, *run.instance, run.workers), comm.size()));
  comm.barrier();
  const int endpoints = run.instance->endpoints();
  IdleRanks idle(comm, endpoints);
  if (idle.idle()) {
    idle.sit_out();
    return std::nullopt;
  }
  SubComm group(comm, GroupMembers::rule(endpoints, 0, 1),
                static_cast<std::uint32_t>(space % kSubCommSpaces));
  // Each process builds its own scheme: the plan's instance is only read.
  SchemeExchange exchange(make_scheme(run.scheme, scheme_options(sc, run.workers)));
  // Worker 0 (rank 0) scores each epoch.
  const EpochCallback each_epoch = [&](const EpochRecord& e) {
    if (on_epoch) on_epoch(e);
    idle.epoch_ended();
  };
  TrainResult r = train_rank(group, exchange, config, source, trace, each_epoch);
  if (trace != nullptr) gather_trace(group, *trace);
  idle.run_ended();
  return r;
}

}  // namespace

void print_train_preamble(std::ostream& out, const Scenario& sc, const TrainJob& job) {
  out << "# gradex run: " << sc.name << "\n" << provenance_line() << "\n";
  if (!sc.description.empty()) out << "# " << sc.description << "\n";
  out << "# train workload: " << job.describe() << "\n";
  out << "# transport " << sc.transport << "; ";
  if (sc.network.shaped) {
    out << "network shaped: ranks per node " << sc.ranks_per_node << ", intra-node "
        << (sc.network.intra_node.unlimited() ? "unlimited"
                                              : format_rate(sc.network.intra_node.bytes_per_second))
        << ", inter-node "
        << (sc.network.inter_node.unlimited() ? "unlimited"
                                              : format_rate(sc.network.inter_node.bytes_per_second));
  } else {
    out << "network unshaped";
  }
  out << "; ps.servers: " << sc.ps_servers << "\n"
      << "# compute-share = compute / iteration (1: communication fully hidden); scaling = "
         "samples/s over N x the fastest one-worker samples/s of any scheme (when the workers "
         "include 1)\n"
      << std::flush;
}

int run_train_plan(const RunPlan& plan, const TrainJob& job, std::ostream& out) {
  const Scenario& sc = plan.scenario;
  check_zero_schemes(plan, job);
  TrainOutcome o;
  Trace trace;
  if (!job.workload().consistency.empty()) {
    run_consistency(sc, job, out, o);
  }
  for (std::size_t i = 0; i < plan.runs.size(); ++i) {
    const PlannedRun& run = plan.runs[i];
    print_train_run_header(out, run, job.config());
    // Only the first run is traced: one readable timeline.
    const bool traced = i == 0 && !job.workload().trace.empty();
    const std::string label = run_label(run.scheme, job.config());
    TrainResult r = run_training(run.scheme, scheme_options(sc, run.workers), job.config(),
                                 job.source(run.workers), rank_transport(sc, run),
                                 traced ? &trace : nullptr,
                                 [&](const EpochRecord& e) { print_epoch(out, label, e); });
    o.runs.push_back({label, run.workers, std::move(r)});
  }
  for (std::size_t i : no_sync_baselines(plan, job)) {
    const PlannedRun& run = plan.runs[i];
    print_no_sync_header(out, run);
    TrainResult r = run_training(run.scheme, scheme_options(sc, run.workers),
                                 no_sync_baseline(job.config()), job.source(run.workers),
                                 rank_transport(sc, run));
    o.runs.push_back({kNoSyncRun, run.workers, std::move(r)});
  }
  return finish_training(out, o, outputs_of(sc, job, trace));
}

int run_train_plan_on_group(const RunPlan& plan, const TrainJob& job, Comm& comm,
                            const std::function<void(const std::optional<Topology>&)>& reshape,
                            std::ostream& out) {
  const Scenario& sc = plan.scenario;
  GRADEX_ENFORCE_EQ(comm.size(), group_size(plan), "launched group size");
  const bool printing = comm.rank() == 0;
  check_zero_schemes(plan, job);
  TrainOutcome o;
  Trace trace;
  if (!job.workload().consistency.empty()) {
    run_consistency_on_group(sc, job, comm, reshape, out, o);
  }
  for (std::size_t i = 0; i < plan.runs.size(); ++i) {
    const PlannedRun& run = plan.runs[i];
    if (printing) print_train_run_header(out, run, job.config());
    const bool traced = i == 0 && !job.workload().trace.empty();
    const std::string label = run_label(run.scheme, job.config());
    EpochCallback on_epoch;
    if (printing) on_epoch = [&](const EpochRecord& e) { print_epoch(out, label, e); };
    std::optional<TrainResult> r = train_on_group(sc, comm, reshape, run, i, job.config(),
                                                  job.source(run.workers),
                                                  traced ? &trace : nullptr, on_epoch);
    if (printing) o.runs.push_back({label, run.workers, std::move(*r)});
  }
  const std::vector<std::size_t> baselines = no_sync_baselines(plan, job);
  for (std::size_t k = 0; k < baselines.size(); ++k) {
    const PlannedRun& run = plan.runs[baselines[k]];
    if (printing) print_no_sync_header(out, run);
    // Tag spaces after the planned runs': no two runs share one.
    std::optional<TrainResult> r =
        train_on_group(sc, comm, reshape, run, plan.runs.size() + k,
                       no_sync_baseline(job.config()), job.source(run.workers), nullptr, {});
    if (printing) o.runs.push_back({kNoSyncRun, run.workers, std::move(*r)});
  }
  // Every rank finishes its share before rank 0 reports.
  comm.barrier();
  if (!printing) return kExitOk;
  return finish_training(out, o, outputs_of(sc, job, trace));
}

}  // namespace gradex
