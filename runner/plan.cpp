#include "runner/plan.h"

#include <algorithm>

#include "common/errors.h"
#include "common/memory_budget.h"
#include "common/units.h"
#include "config/tuned_table_file.h"
#include "gpu/cuda.h"
#include "schemes/registry.h"
#include "transport/options.h"

namespace gradex {

namespace {

// Each worker holds its buffer plus about one message of it in flight (a
// process transport's unexpected message, recursive doubling's outgoing
// copy); a PS's servers hold accumulators and staging that add up to two
// more buffers. Every rank shares this machine: threads of `gradex run`,
// or the processes `gradex launch -n` starts here (ranks spread over
// several hosts are counted as if on one). The simulator's buffers are
// phantoms.
void check_benchmark_memory(const std::vector<PlannedRun>& runs, const Scenario& scenario) {
  if (scenario.transport == "sim" || scenario.sizes.empty()) return;
  const auto largest = std::max_element(scenario.sizes.begin(), scenario.sizes.end());
  const double size = static_cast<double>(*largest);
  const auto* written = scenario.source.is_object() && scenario.source.contains("sizes")
                            ? &scenario.source["sizes"]
                            : nullptr;
  const std::string field = written && written->is_object()
                                ? "/sizes/to"
                                : "/sizes/" + std::to_string(largest - scenario.sizes.begin());
  for (const PlannedRun& run : runs) {
    const int servers = run.instance->endpoints() - run.workers;
    const int buffers = (2 + run.instance->scratch_buffers()) * run.workers + (servers > 0 ? 2 : 0);
    check_memory_fits(buffers * size, field,
                      format_bytes(size) + " x " + std::to_string(buffers) + " buffers for " +
                          run.scheme + " on " + std::to_string(run.workers) + " workers");
  }
}

// "auto": {"table": ...} applies where auto runs, on the transport it was
// tuned on; whether it covers every worker count, auto checks as it is made.
void load_auto_table(Scenario& scenario, const std::vector<std::string>& names) {
  const std::string field = "/auto/table";
  if (std::find(names.begin(), names.end(), "auto") == names.end()) {
    throw ConfigError(field, "applies to the auto scheme, which this scenario does not run");
  }
  if (scenario.training && !scenario.training->consistency.empty()) {
    throw ConfigError(field, "PS consistency training runs no scheme: remove it");
  }
  auto table = std::make_shared<TunedTable>(load_tuned_table(scenario.auto_table_path, field));
  if (table->transport != scenario.transport) {
    throw ConfigError(field, "was tuned on " + table->transport + ", and this scenario runs on " +
                                 scenario.transport + ": tune it on " + scenario.transport);
  }
  scenario.auto_table = std::move(table);
}

// Device buffers move over the nccl transport, and it moves nothing else;
// both need the CUDA build and a GPU here. The field named is the one that
// asked for the GPU.
void check_device(const Scenario& s) {
  const bool nccl = s.transport == kGpuTransport;
  if (s.device == "cuda" && !nccl) {
    throw ConfigError("/device", "\"cuda\" buffers move over \"transport\": \"nccl\", not \"" +
                                     s.transport + "\"");
  }
  if (nccl && s.device != "cuda") {
    throw ConfigError("/device", "\"transport\": \"nccl\" moves device buffers: remove "
                                 "\"device\" or set it to \"cuda\"");
  }
  if (nccl && s.network.shaped) {
    throw ConfigError("/network", "does not apply to \"transport\": \"nccl\": NCCL's links "
                                  "cannot be shaped");
  }
  if (!nccl) return;
  if (s.device_given) {
    require_cuda_device("/device", "\"device\": \"cuda\"");
  } else {
    require_cuda_device("/transport", "\"transport\": \"nccl\"");
  }
}

// "symmetric_subset" applies to the simulator's benchmark, on a run with
// no straggler (one late rank is not a shifted copy of the others).
void check_subset_applies(const Scenario& s) {
  const std::string field = "/symmetric_subset";
  if (s.symmetric_subset == 0) return;
  if (s.transport != "sim") {
    throw ConfigError(field, "applies to the simulator only (\"transport\": \"sim\", or gradex "
                             "simulate): real ranks all run");
  }
  if (s.training) throw ConfigError(field, "applies to the benchmark, not to a train workload");
  if (s.straggler_ms > 0) {
    throw ConfigError(field, "needs every rank to do the same: a straggler (straggler_ms) is "
                             "one rank that does not");
  }
}

// A subset stands for the whole exactly when (runner/simulate.h) the
// scheme is symmetric, the network repeats with a period dividing the
// subset, the subset divides the workers, and every block is the same size.
void check_symmetric_subset(const std::vector<PlannedRun>& runs, const Scenario& s) {
  const int subset = s.symmetric_subset;
  if (subset == 0) return;
  const std::string field = "/symmetric_subset";
  const std::string ranks = std::to_string(subset) + " ranks";
  // Whole nodes, and whole leaves under a spine.
  const int period = s.ranks_per_node * std::max(1, s.network.nodes_per_leaf);
  if (subset % period != 0) {
    throw ConfigError(field, ranks + " are not a whole number of the network's repeating unit (" +
                                 std::to_string(period) + " ranks: ranks_per_node x the spine's "
                                 "nodes_per_leaf)");
  }
  for (const PlannedRun& run : runs) {
    if (!run.instance->symmetric(s.collective)) {
      throw ConfigError(field, "'" + run.scheme + "' does not run one schedule on every rank "
                               "shifted by rank, so a subset cannot stand for it (the ring's "
                               "all-reduce, reduce-scatter and all-gather do): name the schemes");
    }
    const std::size_t workers = static_cast<std::size_t>(run.workers);
    if (workers % static_cast<std::size_t>(subset) != 0) {
      throw ConfigError(field, ranks + " do not divide " + std::to_string(run.workers) +
                                   " workers");
    }
    const std::size_t per_slice = s.slice_bytes / dtype_size(s.dtype);
    for (std::size_t bytes : s.sizes) {
      const std::size_t count = bytes / dtype_size(s.dtype);
      if (count % workers != 0 || (per_slice > 0 && per_slice % workers != 0)) {
        throw ConfigError(field, "needs blocks of one size: " + format_bytes(static_cast<double>(bytes)) +
                                     " (" + std::to_string(count) + " elements" +
                                     (per_slice > 0 ? ", in slices of " + std::to_string(per_slice) : "") +
                                     ") does not split evenly over " + std::to_string(run.workers) +
                                     " workers");
      }
    }
  }
}

}  // namespace

RunPlan plan_runs(Scenario scenario) {
  RunPlan plan;
  if (!scenario.training) {
    check_device(scenario);
  } else if (scenario.transport == kGpuTransport) {
    throw ConfigError("/transport", "\"nccl\" runs the benchmark on device buffers; training "
                                    "keeps its model in host memory: use inproc, tcp or zmq");
  }
  std::vector<std::string> names = scenario.schemes;
  if (scenario.all_schemes) {
    names.clear();
    // "all" takes the baselines only where they can run.
    for (const SchemeEntry& e : scheme_registry()) {
      const bool transport_fits = e.needs_transport.empty() || e.needs_transport == scenario.transport;
      if ((!e.enabled || e.enabled()) && transport_fits) names.push_back(e.name);
    }
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string field = "/schemes/" + std::to_string(i);
    const SchemeEntry& entry = find_scheme(names[i], field);  // throws on unknown names
    if (entry.baseline && scenario.network.shaped) {
      throw ConfigError(field, "'" + names[i] + "' moves its bytes over its library's own "
                               "connections, which gradex cannot shape: drop \"network\" or the scheme");
    }
    if (!entry.needs_transport.empty() && scenario.transport != entry.needs_transport) {
      throw ConfigError(field, "'" + names[i] + "' runs on \"transport\": \"" +
                                   entry.needs_transport + "\", not \"" + scenario.transport + "\"");
    }
  }
  if (!scenario.auto_table_path.empty()) load_auto_table(scenario, names);
  check_subset_applies(scenario);
  // Checked here rather than in the parser: `gradex simulate` moves a
  // scenario onto the simulator.
  if (scenario.network.nodes_per_leaf > 0 && scenario.transport != "sim") {
    throw ConfigError("/network/spine", "is modelled by the simulator only (\"transport\": "
                                        "\"sim\", or gradex simulate): the shapers of real "
                                        "transports have no second tier");
  }
  for (std::size_t i = 0; i < scenario.workers.size(); ++i) {
    if (scenario.transport != "sim" && scenario.workers[i] > kMaxRealRanks) {
      throw ConfigError("/workers/" + std::to_string(i),
                        std::to_string(scenario.workers[i]) + " workers need \"transport\": \"sim\" "
                        "(real transports take at most " + std::to_string(kMaxRealRanks) + ")");
    }
  }
  if (scenario.transport != "sim" && scenario.ps_servers > kMaxRealRanks) {
    throw ConfigError("/ps/servers", std::to_string(scenario.ps_servers) +
                                         " servers need \"transport\": \"sim\" (real transports "
                                         "take at most " + std::to_string(kMaxRealRanks) + ")");
  }
  if (scenario.training) {
    // Checked here rather than in the parser: --transport overrides it.
    if (!scenario.training->consistency.empty()) {
      if (scenario.ps_servers < 1) {
        throw ConfigError("/ps/servers", "PS consistency training needs at least one server");
      }
      if (scenario.network.switch_given || scenario.network.node_switch_given) {
        throw ConfigError(scenario.network.switch_given ? "/network/switch" : "/network/node_switch",
                          "applies to the in_network schemes, not to PS consistency training");
      }
      // Its runs are (workers, consistency model), through its own servers.
      plan.scenario = std::move(scenario);
      return plan;
    }
  }
  for (int workers : scenario.workers) {
    for (std::size_t i = 0; i < names.size(); ++i) {
      const std::string& name = names[i];
      const SchemeEntry& entry = find_scheme(name);
      PlannedRun run;
      run.scheme = name;
      run.summary = entry.summary;
      run.workers = workers;
      const std::string field = "/schemes/" + std::to_string(i);
      try {
        run.instance = make_scheme(name, scheme_options(scenario, workers), field);
      } catch (const ConfigError& e) {
        if (e.field() == field) throw;  // the name itself: "ps@64KiB"
        throw ConfigError("/" + e.field(),
                          "with " + std::to_string(workers) + " workers, scheme '" + name +
                              "': " + e.reason());
      }
      // ZeRO training shards with reduce-scatter and all-gather: "all"
      // means the schemes that can (shards_training; a scheme named
      // outright that cannot is refused by name when the training is planned).
      const bool shards = scenario.training && scenario.training->zero > 0;
      if (shards && scenario.all_schemes && !shards_training(*run.instance)) continue;
      // "all" means every scheme that provides the collective; a scheme
      // named outright must provide it, or, when "collective" sweeps, one
      // of the swept collectives (checked over the points by the caller).
      if (!run.instance->provides(scenario.collective)) {
        if (scenario.all_schemes || scenario.collective_swept) continue;
        throw ConfigError("/schemes/" + std::to_string(i),
                          "scheme '" + name + "' does not provide \"collective\": \"" +
                              std::string(collective_name(scenario.collective)) + "\"");
      }
      // A switch that sums: "all" leaves in_network out where the network
      // has none; named, it is refused (scenario_topology says why).
      if (run.instance->reduces_in_network()) {
        try {
          scenario_topology(scenario, *run.instance, workers);
        } catch (const ConfigError& e) {
          if (scenario.all_schemes) continue;
          throw ConfigError(e.field(), "with " + std::to_string(workers) + " workers: " + e.reason());
        }
      }
      plan.runs.push_back(std::move(run));
    }
  }
  // The switch between the nodes (or in_network's one switch).
  const auto uses_switch = [](const PlannedRun& r) {
    const auto levels = r.instance->reducing_switches();
    return levels == Scheme::ReducingSwitches::one ||
           levels == Scheme::ReducingSwitches::per_node_and_across;
  };
  if (scenario.network.switch_given &&
      std::none_of(plan.runs.begin(), plan.runs.end(), uses_switch)) {
    throw ConfigError("/network/switch",
                      "applies to in_network and in_network_hierarchical, which this scenario "
                      "does not run");
  }
  // The switch inside each node sums for in_network_hierarchical and
  // in_network_tree, and for in_network on one node when network.switch
  // does not stand for it.
  const auto uses_node_switch = [&](const PlannedRun& r) {
    const auto levels = r.instance->reducing_switches();
    return levels == Scheme::ReducingSwitches::per_node_and_across ||
           levels == Scheme::ReducingSwitches::per_node ||
           (levels == Scheme::ReducingSwitches::one && r.workers <= scenario.ranks_per_node &&
            !scenario.network.switch_given);
  };
  if (scenario.network.node_switch_given &&
      std::none_of(plan.runs.begin(), plan.runs.end(), uses_node_switch)) {
    throw ConfigError("/network/node_switch",
                      "applies to in_network_hierarchical, in_network_tree, and in_network on "
                      "one node without network.switch: this scenario runs none of them");
  }
  // Nodes of consecutive ranks decide which ports a message crosses on a
  // shaped network, and how the schemes built on nodes group their ranks;
  // unshaped, nothing else reads them.
  if (scenario.ranks_per_node_given && !scenario.network.shaped &&
      std::none_of(plan.runs.begin(), plan.runs.end(), [](const PlannedRun& r) {
        return find_scheme(r.scheme).reads_ranks_per_node;
      })) {
    throw ConfigError("/ranks_per_node", "applies to a shaped network (\"network\") and to the "
                                         "schemes built on nodes (" + node_scheme_names() +
                                         "): this scenario has neither");
  }
  // A field only some schemes read, given where none of them runs.
  const auto given = [&](std::string_view pointer) {
    if (pointer == "/segment_bytes") return scenario.segment_given;
    if (pointer == "/ps/servers") return scenario.ps_servers_given;
    if (pointer == "/hierarchical/inter") return scenario.inter_given;
    throw InvariantError("no record of whether " + std::string(pointer) + " was given");
  };
  for (const SchemeField& field : scheme_fields()) {
    if (!given(field.pointer) ||
        std::any_of(plan.runs.begin(), plan.runs.end(), [&](const PlannedRun& r) {
          return field.reads(find_scheme(r.scheme), *r.instance);
        })) {
      continue;
    }
    throw ConfigError(std::string(field.pointer),
                      "applies to the schemes " + std::string(field.readers) + " (" +
                          scheme_readers(field) + "), which this scenario does not run");
  }
  if (plan.runs.empty() && !scenario.workers.empty()) {
    throw ConfigError("/collective", "no scheme here provides \"" +
                                         std::string(collective_name(scenario.collective)) + "\"");
  }
  check_benchmark_memory(plan.runs, scenario);
  check_symmetric_subset(plan.runs, scenario);
  plan.scenario = std::move(scenario);
  return plan;
}

}  // namespace gradex
