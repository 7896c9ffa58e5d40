// gradex launch: the same run as `gradex run`, with every endpoint a
// process of its own talking over TCP or ZeroMQ. Two roles, one binary:
//  - launcher (`-n N`, no rank in the environment): starts the N workers
//    (+ dedicated servers) on this machine, each with GRADEX_RANK,
//    GRADEX_WORLD_SIZE, GRADEX_RENDEZVOUS and GRADEX_TOKEN, and watches them;
//  - participant (rank in the environment, from gradex, mpirun or srun):
//    rank 0 hosts the rendezvous store, everyone registers its address,
//    connects to the others, runs the plan; rank 0 prints the table and
//    writes the results.
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>

#include <utility>

#include "cli/command.h"
#include "runner/message_limit.h"
#include "baselines/mpi_job.h"
#include "cli/scenario_flags.h"
#include "runner/train_plan.h"
#include "common/cancel.h"
#include "common/debug_log.h"
#include "common/errors.h"
#include "transport/group_endpoint.h"
#include "transport/nccl/world.h"
#include "runner/group_run.h"
#include "runner/hostfile.h"
#include "runner/join_group.h"
#include "runner/launch_env.h"
#include "runner/report.h"
#include "runner/spawn.h"

namespace gradex::cli {

namespace {

struct LaunchFlags {
  ScenarioFlags scenario;
  int workers = 0;
  bool quiet = false;
  std::string hostfile;  // the launcher's only: where each rank runs
};

// The participant's command line: the launcher's, minus what only the
// launcher needs.
std::vector<std::string> participant_args(const LaunchFlags& f) {
  std::vector<std::string> a = {"launch", f.scenario.scenario, "-n", std::to_string(f.workers)};
  if (f.scenario.servers) a.insert(a.end(), {"--servers", std::to_string(*f.scenario.servers)});
  if (!f.scenario.transport.empty()) a.insert(a.end(), {"--transport", f.scenario.transport});
  if (!f.scenario.schemes.empty()) {
    std::string s;
    for (const auto& n : f.scenario.schemes) s += (s.empty() ? "" : ",") + n;
    a.insert(a.end(), {"--schemes", s});
  }
  if (!f.scenario.fields.collective.empty()) {
    a.insert(a.end(), {"--collective", f.scenario.fields.collective});
  }
  if (f.scenario.unshaped) a.push_back("--unshaped");
  if (!f.scenario.output.empty()) a.insert(a.end(), {"-o", f.scenario.output});
  if (f.scenario.no_output) a.push_back("--no-output");
  if (f.quiet) a.push_back("-q");
  return a;
}

int run_launcher(const LaunchFlags& f, const RunPlan& plan) {
  const int size = group_size(plan);
  std::vector<std::string> hosts;
  if (!f.hostfile.empty()) hosts = place_ranks(read_hostfile(f.hostfile), size);
  return launch_group(participant_args(f), size, plan.scenario.timeout, hosts);
}

int run_participant(const LaunchEnv& env, const LaunchFlags& f, const RunPlan& plan) {
  const int size = group_size(plan);
  if (env.size != size) {
    throw ConfigError(env.size_variable, detail::concat(env.size, " processes, but the plan needs ", size,
                                               " endpoints (workers plus dedicated servers)"));
  }
  const Scenario& sc = plan.scenario;
  // Every process loads its training data before the group forms, so a
  // missing file fails each of them alike instead of stalling the others.
  std::optional<TrainJob> job;
  if (sc.training) {
    job.emplace(*sc.training, workload_fields(f.scenario));
    job->check_worker_counts(sc.workers, workload_fields(f.scenario));
  }
  TransportOptions options;
  options.timeout = sc.timeout;
  options.spin = sc.spin;
  options.max_message_bytes = message_limit(plan, job ? &*job : nullptr);
  // The nccl transport's processes join a tcp group first: it carries
  // NCCL's unique id, the gathers' control and the orderly close.
  const bool nccl = sc.transport == kGpuTransport;
  auto owned = join_group(env, nccl ? "tcp" : sc.transport, size, options);
  if (nccl) owned = make_nccl_group_endpoint(std::move(owned), options);
  GroupEndpoint& endpoint = *owned;
  std::ostream& out = std::cout;
  const bool printing = env.rank == 0;
  if (printing) {
    if (job) {
      print_train_preamble(out, sc, *job);
    } else {
      print_preamble(out, sc);
    }
    out << "# launched: " << size << " processes over " << sc.transport << " (ranks from "
        << env.source << " variables)" << std::endl;
  }
  const auto reshape = [&](const std::optional<Topology>& t) { endpoint.set_shaping(t); };
  std::vector<ResultRow> rows;
  try {
    const std::string ranks = describe_group_ranks(endpoint);
    if (printing) out << ranks << std::flush;
    if (job) {
      const int code = run_train_plan_on_group(plan, *job, endpoint, reshape, out);
      endpoint.close();
      return code;
    }
    const PlannedRun* current = nullptr;
    rows = execute_plan_on_group(
        plan, endpoint, reshape,
        [&](const PlannedRun& run, const ResultRow& row) {
          if (f.quiet) return;
          if (current != &run) {
            print_run_header(out, run);
            current = &run;
          }
          print_row(out, row);
          out.flush();
        });
    endpoint.close();
  } catch (const PeerLostError& e) {
    endpoint.abort(e.peer(), e.what());
    throw;
  } catch (const std::exception& e) {
    endpoint.abort(env.rank, e.what());
    throw;
  }
  if (!printing) return kExitOk;
  print_summary(out, sc, rows);
  if (!sc.output.empty()) {
    write_results(sc.output, sc, rows);
    out << "# results written to " << sc.output << "/results.{csv,json}\n";
  }
  return all_correct(rows) ? kExitOk : kExitWrong;
}

}  // namespace

Command add_launch_command(CLI::App& parent) {
  auto f = std::make_shared<LaunchFlags>();
  CLI::App* cmd = parent.add_subcommand(
      "launch", "run a scenario with every endpoint a process of its own (TCP); also joins a run "
                "from GRADEX_RANK/GRADEX_WORLD_SIZE/GRADEX_RENDEZVOUS, mpirun or srun");
  add_scenario_flags(*cmd, f->scenario);
  cmd->add_option("-n", f->workers, "worker processes (overrides the scenario's workers)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--servers", f->scenario.servers,
                  "dedicated parameter-server processes (overrides ps.servers)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("-o,--output", f->scenario.output,
                  "folder for results.csv and results.json (overrides the scenario's \"output\")");
  cmd->add_flag("--no-output", f->scenario.no_output, "write no result files");
  cmd->add_flag("-q,--quiet", f->quiet, "print only the summary");
  cmd->add_option("--hostfile", f->hostfile,
                  "start the ranks on these hosts (lines 'host [slots=K]', filled in order; "
                  "others than this one through GRADEX_RSH, default ssh)");
  add_unshaped_flag(*cmd, f->scenario);
  add_collective_flag(*cmd, f->scenario);
  return {cmd, [f] {
            if (f->workers > 0) f->scenario.workers = {f->workers};
            auto env = launch_env([](const char* name) { return std::getenv(name); });
            if (env && !f->hostfile.empty()) {
              throw ConfigError("--hostfile",
                                detail::concat("applies to the launcher (gradex launch -n N), not to a "
                                               "rank (", env->source, " variables make this rank ",
                                               env->rank, ")"));
            }
            // Started by mpirun: join its MPI job before planning, so that
            // the MPI baselines can be planned and run next to our schemes.
            std::optional<MpiJob> mpi;
            if (env && env->source == "OMPI" && mpi_built()) mpi.emplace();
            const RunPlan plan = load_plan(f->scenario);
            if (plan.scenario.transport != "tcp" && plan.scenario.transport != "zmq" &&
                plan.scenario.transport != kGpuTransport) {
              throw ConfigError("/transport", "gradex launch needs a process transport (tcp, zmq, "
                                              "nccl); "
                                              "the scenario says '" +
                                                  plan.scenario.transport +
                                                  "' (use --transport tcp)");
            }
            if (plan.scenario.workers.size() != 1) {
              throw ConfigError("-n", "a launched run has one worker count: give -n");
            }
            // Checked where the files are written: by rank 0, and by the
            // launcher before any rank starts.
            if (!env || env->rank == 0) check_output_paths(f->scenario, plan.scenario);
            if (env && env->rendezvous.empty()) {
              // Under mpirun without GRADEX_RENDEZVOUS: rank 0 picks a free
              // port where it will host the store and the job tells everyone.
              if (!mpi) {
                throw ConfigError("GRADEX_RENDEZVOUS",
                                  "missing: set it to host:port where rank 0 hosts the rendezvous "
                                  "store (gradex was built without MPI to learn it from mpirun)");
              }
              env->rendezvous = mpi_broadcast_from_rank0(
                  env->rank == 0 ? free_rendezvous(env->bind_host, env->advertise) : std::string(),
                  plan.scenario.timeout);
              GRADEX_DEBUG_LOG("rank ", env->rank, ": rendezvous ", env->rendezvous,
                               " learnt from the MPI job");
            }
            if (env) {
              const int code = run_participant(*env, *f, plan);
              if (mpi) mpi->finalize();
              return code;
            }
            if (f->workers == 0) throw ConfigError("-n", "required to start the processes");
            return run_launcher(*f, plan);
          }};
}

}  // namespace gradex::cli
