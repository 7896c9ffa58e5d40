#include "cli/scenario_flags.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "common/errors.h"
#include "config/json_file.h"
#include "config/repeats.h"
#include "config/scenario.h"
#include "config/sweeps.h"
#include "runner/output_paths.h"
#include "runner/train_plan.h"
#include "schemes/registry.h"
#include "transport/options.h"
#include "train/train_job.h"

namespace gradex::cli {

void add_scenario_flags(CLI::App& cmd, ScenarioFlags& flags, bool with_fields) {
  cmd.add_option("scenario", flags.scenario,
                 with_fields ? "scenario file (JSON; optional: the flags alone make one)"
                             : "scenario file (JSON)")
      ->required(!with_fields);
  // Lists are one comma-separated word each, so that the scenario file
  // after them is not read as one more element.
  cmd.add_option("-s,--schemes", flags.schemes, "run only these schemes (overrides the scenario)")
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd.add_option(with_fields ? "-n,--workers" : "--workers", flags.workers,
                 "worker counts to run (overrides the scenario)")
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd.add_option("--transport", flags.transport, "transport (overrides the scenario's)")
      ->check(CLI::IsMember(std::vector<std::string>(std::begin(kAllTransportNames),
                                                     std::end(kAllTransportNames))));
  cmd.add_option("--device", flags.device,
                 "where the buffers live: cpu, or cuda (with --transport nccl; its default)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  if (with_fields) add_field_flags(cmd, flags);
}

void add_field_flags(CLI::App& cmd, ScenarioFlags& flags) {
  FieldFlags& f = flags.fields;
  cmd.add_option("--name", f.name, "the scenario's name (without a file: \"flags\")");
  cmd.add_option("-b,--minbytes", f.min_bytes, "smallest size, e.g. 8 or 4KiB (nccl-tests' -b)");
  cmd.add_option("-e,--maxbytes", f.max_bytes, "largest size (default: -b's)");
  cmd.add_option("-f,--stepfactor", f.step_factor, "size multiplier between -b and -e (default 2)");
  cmd.add_option("--iters", f.iters, "timed iterations per size");
  cmd.add_option("--warmup", f.warmup, "warm-up iterations per size");
  add_collective_flag(cmd, flags);
  cmd.add_option("--dtype", f.dtype, "f32 f64 f16 bf16 i32");
  cmd.add_option("--op", f.op, "sum avg min max");
  cmd.add_option("--ranks-per-node", f.ranks_per_node, "consecutive ranks per node");
  cmd.add_option("--link", f.link, "inter-node link: a rate (1GB/s, 10Gbps) or a preset name");
  cmd.add_option("--latency", f.latency, "inter-node latency, e.g. 20us (with --link as a rate)");
  cmd.add_option("--intra-link", f.intra_link, "intra-node link: a rate or a preset name");
  cmd.add_option("--node", f.node, "a node preset (gradex list): its ranks per node, links and NICs");
  cmd.add_option("--switch", f.reducing_switch,
                 "the switch that sums across nodes (in_network, in_network_hierarchical): a rate or a preset name");
  cmd.add_option("--node-switch", f.node_switch,
                 "the switch that sums inside a node (in_network_hierarchical, in_network_tree): a rate or a preset name");
  cmd.add_option("--segment", f.segment, "pipelining segment, e.g. 1MiB");
  cmd.add_option("--straggler-ms", f.straggler_ms, "the last worker starts each iteration late");
  cmd.add_option("--symmetric-subset", f.symmetric_subset,
                 "simulator: run this many ranks of a symmetric scheme (ring) and let them "
                 "stand for all");
  cmd.add_option("--servers", f.servers, "PS servers (ps.servers); several sweep, e.g. 1,2,4")
      ->delimiter(',')
      ->allow_extra_args(false);
}

void add_collective_flag(CLI::App& cmd, ScenarioFlags& flags) {
  std::string collectives;
  for (const std::string& name : collective_names()) collectives += name + " ";
  cmd.add_option("--collective", flags.fields.collective, collectives + "(default all_reduce)");
}

void add_unshaped_flag(CLI::App& cmd, ScenarioFlags& flags) {
  cmd.add_flag("--unshaped", flags.unshaped,
               "ignore the scenario's network: run as fast as the real network goes (e.g. one "
               "shaped with tc between hosts)");
}

std::string scenario_label(const ScenarioFlags& flags) {
  return flags.scenario.empty() ? "(flags)" : flags.scenario;
}

FieldNamer workload_fields(const ScenarioFlags& flags) {
  return [path = flags.scenario](const std::string& key) { return path + "#/workload/" + key; };
}

namespace {

// Each field flag, the flag's name and where it writes in the document
// (`write` false: only names the flag for errors under `pointer`; the more
// specific pointers come first).
struct FieldWrite {
  const char* flag;
  nlohmann::json::json_pointer pointer;
  nlohmann::json value;
  bool write = true;
};

// A rate ("1GB/s") or a preset name ("ib_hdr_200g") as a link object.
nlohmann::json link_value(const std::string& text, const std::string& latency) {
  const bool rate = !text.empty() && (std::isdigit(static_cast<unsigned char>(text[0])) != 0 ||
                                      text[0] == '.');
  nlohmann::json link = {{rate ? "bandwidth" : "preset", text}};
  if (!latency.empty()) link["latency"] = latency;
  return link;
}

std::vector<FieldWrite> field_writes(const FieldFlags& f) {
  using P = nlohmann::json::json_pointer;
  std::vector<FieldWrite> w;
  if (!f.name.empty()) w.push_back({"--name", P("/name"), f.name});
  if (!f.min_bytes.empty() || !f.max_bytes.empty() || f.step_factor) {
    nlohmann::json sweep = {{"from", f.min_bytes.empty() ? f.max_bytes : f.min_bytes},
                            {"to", f.max_bytes.empty() ? f.min_bytes : f.max_bytes}};
    if (f.step_factor) sweep["factor"] = *f.step_factor;
    w.push_back({"-e", P("/sizes/to"), nullptr, false});
    w.push_back({"-f", P("/sizes/factor"), nullptr, false});
    w.push_back({"-b", P("/sizes"), sweep});
  }
  if (f.iters) w.push_back({"--iters", P("/iters"), *f.iters});
  if (f.warmup) w.push_back({"--warmup", P("/warmup_iters"), *f.warmup});
  if (!f.collective.empty()) w.push_back({"--collective", P("/collective"), f.collective});
  if (!f.dtype.empty()) w.push_back({"--dtype", P("/dtype"), f.dtype});
  if (!f.op.empty()) w.push_back({"--op", P("/op"), f.op});
  if (f.ranks_per_node) w.push_back({"--ranks-per-node", P("/ranks_per_node"), *f.ranks_per_node});
  if (!f.link.empty()) {
    w.push_back({"--link", P("/network/inter_node"), link_value(f.link, f.latency)});
  } else if (!f.latency.empty()) {
    throw ConfigError("--latency", "applies with --link only");
  }
  if (!f.intra_link.empty()) {
    w.push_back({"--intra-link", P("/network/intra_node"), link_value(f.intra_link, "")});
  }
  if (!f.node.empty()) w.push_back({"--node", P("/network/node"), f.node});
  if (!f.reducing_switch.empty()) {
    w.push_back({"--switch", P("/network/switch"), link_value(f.reducing_switch, "")});
  }
  if (!f.node_switch.empty()) {
    w.push_back({"--node-switch", P("/network/node_switch"), link_value(f.node_switch, "")});
  }
  if (!f.segment.empty()) w.push_back({"--segment", P("/segment_bytes"), f.segment});
  if (f.straggler_ms) w.push_back({"--straggler-ms", P("/straggler_ms"), *f.straggler_ms});
  if (f.symmetric_subset) {
    w.push_back({"--symmetric-subset", P("/symmetric_subset"), *f.symmetric_subset});
  }
  if (!f.servers.empty()) {
    w.push_back({"--servers", P("/ps/servers"),
                 f.servers.size() == 1 ? nlohmann::json(f.servers[0]) : nlohmann::json(f.servers)});
  }
  return w;
}

// The scenario document: the file's, or an empty one, with every field
// flag written in (nullopt: the file is no JSON object; load_scenario then
// names it).
std::optional<nlohmann::json> document_with_fields(const ScenarioFlags& flags,
                                                   const std::vector<FieldWrite>& writes) {
  nlohmann::json doc = flags.scenario.empty() ? nlohmann::json{{"name", "flags"}}
                                              : read_json_file(flags.scenario);
  if (!doc.is_object()) return std::nullopt;
  for (const FieldWrite& w : writes) {
    if (w.write) doc[w.pointer] = w.value;
  }
  return doc;
}

// An error at `field` of the document, named as the user wrote it: the
// flag that set the field, or the file's JSON pointer.
[[noreturn]] void throw_named(const ScenarioFlags& flags, const std::vector<FieldWrite>& writes,
                              const std::string& field, const std::string& reason) {
  if (!flags.schemes.empty() && field.rfind("/schemes", 0) == 0) throw ConfigError("--schemes", reason);
  for (const FieldWrite& w : writes) {
    if (field.rfind(w.pointer.to_string(), 0) == 0) throw ConfigError(w.flag, reason);
  }
  // A field no flag wrote: without a file, a flag is missing.
  if (flags.scenario.empty() && field == "/sizes") {
    throw ConfigError("-b", "missing: give -b (and -e, -f) or a scenario file");
  }
  throw ConfigError(scenario_label(flags) + "#" + field, reason);
}

RunPlan plan_with_overrides(const ScenarioFlags& flags, Scenario s) {
  // Each override goes into the scenario embedded in results.json too, so
  // that the file there re-runs the plan that ran.
  nlohmann::json& source = s.source;
  if (!flags.schemes.empty()) {
    if (const auto r = first_repeat(flags.schemes)) {
      throw ConfigError("--schemes", "gives '" + flags.schemes[r->first] + "' twice");
    }
    s.schemes = flags.schemes;
    s.all_schemes = false;
    for (const auto& name : s.schemes) find_scheme(name, "--schemes");
    source["schemes"] = flags.schemes;
  }
  if (!flags.transport.empty()) {
    s.transport = flags.transport;
    source["transport"] = flags.transport;
    // A real run's wall-clock settings and iteration counts mean nothing
    // to the simulator (counts a flag gave are checked instead).
    if (s.transport == "sim") {
      source.erase("timeout_ms");
      source.erase("spin_us");
      check_simulated_iterations(s, flags.fields.iters.has_value(), flags.fields.warmup.has_value());
      if (!flags.fields.iters) source.erase("iters");
      if (!flags.fields.warmup) source.erase("warmup_iters");
    }
    if (!s.device_given) s.device = default_device(s.transport);
  }
  if (!flags.device.empty()) {
    s.device = flags.device;
    s.device_given = true;
    source["device"] = flags.device;
  }
  if (!flags.workers.empty()) {
    const int most = s.transport == "sim" ? kMaxSimulatedRanks : kMaxRealRanks;
    for (int w : flags.workers) {
      if (w < 1 || w > most) {
        throw ConfigError("--workers", "must be between 1 and " + std::to_string(most) +
                                           (s.transport == "sim" ? "" : " (more on --transport sim)"));
      }
    }
    if (const auto r = first_repeat(flags.workers)) {
      throw ConfigError("--workers", "gives " + std::to_string(flags.workers[r->first]) + " twice");
    }
    s.workers = flags.workers;
    source["workers"] = flags.workers;
  }
  if (flags.servers) {
    s.ps_servers = *flags.servers;
    s.ps_servers_given = true;
    source["ps"]["servers"] = *flags.servers;
  }
  if (!flags.output.empty()) {
    s.output = flags.output;
    source["output"] = flags.output;
  }
  if (flags.no_output) {
    s.output.clear();
    source.erase("output");
  }
  if (flags.unshaped) {
    s.network = NetworkConfig{};
    source.erase("network");
  }
  // Names only train/ knows (models, optimizers, hooks), checked before
  // anything runs or any process starts.
  if (s.training) {
    check_train_workload(*s.training, workload_pointer());
    // Every worker of the largest run shares this machine: threads of
    // `gradex run`, or the processes `gradex launch -n` starts here.
    const int largest = *std::max_element(s.workers.begin(), s.workers.end());
    check_train_memory(*s.training, largest, s.transport, workload_pointer());
  }
  return plan_runs(std::move(s));
}

// A scheme named outright that provides none of the swept collectives
// would run nowhere: refused, as a scheme that does not provide an
// unswept collective is by plan_runs.
void check_named_schemes_run(const std::vector<RunPlan>& plans, const ScenarioFlags& flags,
                             const std::vector<FieldWrite>& writes) {
  const Scenario& first = plans.front().scenario;
  if (!first.collective_swept || first.all_schemes) return;
  for (std::size_t i = 0; i < first.schemes.size(); ++i) {
    bool runs = false;
    for (const RunPlan& plan : plans) {
      for (const PlannedRun& run : plan.runs) runs = runs || run.scheme == first.schemes[i];
    }
    if (!runs) {
      throw_named(flags, writes, "/schemes/" + std::to_string(i),
                  "scheme '" + first.schemes[i] + "' provides none of the swept collectives");
    }
  }
}

// Every point's plan; `sweeps` false: a scenario that sweeps is refused
// (the commands that run one point: launch, tune, train).
std::vector<RunPlan> plans_of_points(const ScenarioFlags& flags, bool sweeps) {
  const std::vector<FieldWrite> writes = field_writes(flags.fields);
  const std::optional<nlohmann::json> doc = document_with_fields(flags, writes);
  if (!doc) {
    load_scenario(flags.scenario);  // throws, naming the file
    throw ConfigError(flags.scenario, "expected a JSON object");
  }
  std::vector<SweepPoint> points;
  try {
    points = expand_sweeps(*doc);
  } catch (const ConfigError& e) {
    throw_named(flags, writes, e.field(), e.reason());
  }
  std::vector<RunPlan> plans;
  for (const SweepPoint& point : points) {
    RunPlan plan;
    try {
      plan = plan_with_overrides(flags, parse_sweep_point(point));
    } catch (const ConfigError& e) {
      // Checks after parsing name a JSON pointer; flags name themselves.
      if (e.field().rfind('/', 0) != 0) throw;
      throw_named(flags, writes, sweep_pointer(point, e.field()), e.reason());
    }
    plan.sweep = point.label;
    for (PlannedRun& run : plan.runs) run.sweep = point.label;
    if (!point.taken.empty()) {
      plan.swept_field = point.taken.front().first;
      if (flags.unshaped && plan.swept_field.rfind("/network", 0) == 0) {
        throw ConfigError("--unshaped", "drops the network this scenario sweeps (" +
                                            plan.swept_field + ")");
      }
      // results.json embeds the whole sweep, so that it re-runs every point.
      for (const auto& [pointer, index] : point.taken) {
        const nlohmann::json::json_pointer p(pointer);
        plan.scenario.source[p] = doc->at(p);
      }
    }
    plans.push_back(std::move(plan));
  }
  check_named_schemes_run(plans, flags, writes);
  if (plans.size() > 1 && (!sweeps || plans.front().scenario.training)) {
    throw_named(flags, writes, plans.front().swept_field,
                plans.front().scenario.training
                    ? "sweeps apply to all-reduce workloads; a training run takes one value"
                    : "a list here sweeps, and this command runs one point (gradex run, simulate "
                      "and validate take sweeps): give one value");
  }
  return plans;
}

}  // namespace

std::vector<RunPlan> load_plans(const ScenarioFlags& flags) { return plans_of_points(flags, true); }

RunPlan load_plan(const ScenarioFlags& flags) {
  return std::move(plans_of_points(flags, false).front());
}

void check_output_paths(const ScenarioFlags& flags, const Scenario& s) {
  if (!s.output.empty()) {
    check_output_folder(s.output, !flags.output.empty() ? "-o" : flags.scenario + "#/output");
  }
  if (s.training && !s.training->trace.empty()) {
    check_output_file(s.training->trace, workload_fields(flags)("trace"));
  }
}

int run_training_scenario(const RunPlan& plan, const ScenarioFlags& flags, bool quiet,
                          std::ostream& out) {
  if (quiet) throw ConfigError("-q", "applies to all-reduce workloads; a training run prints its epochs");
  const TrainJob job(*plan.scenario.training, workload_fields(flags));
  job.check_worker_counts(plan.scenario.workers, workload_fields(flags));
  print_train_preamble(out, plan.scenario, job);
  return run_train_plan(plan, job, out);
}

}  // namespace gradex::cli
