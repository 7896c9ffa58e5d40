// gradex train: data-parallel training of an MLP on Fashion-MNIST (or of an
// emulated profiled model) under one or more schemes (the same loop, the
// same data, the same seed), printing per-epoch loss and accuracy and a
// timing summary, and writing results.csv, results.json and optionally a
// Chrome trace of the first steps. The flags fill the same TrainWorkload a
// scenario's "workload" does; the job and the output are shared with
// `gradex run` (train/train_job.h, runner/train_output.h).
#include <algorithm>
#include <iostream>
#include <memory>

#include "cli/command.h"
#include "runner/machine.h"
#include "runner/train_output.h"
#include "common/errors.h"
#include "common/topology.h"
#include "config/workload.h"
#include "runner/output_paths.h"
#include "schemes/registry.h"
#include "train/train_job.h"

namespace gradex::cli {

namespace {

struct TrainFlags {
  TrainWorkload w = [] {
    TrainWorkload d;
    d.epochs = 3;
    d.data_dir = kFashionMnistDir.string();
    d.model.clear();  // --profile; empty: the MLP
    return d;
  }();
  std::vector<std::string> schemes{"ring"};
  int workers = 4;
  bool no_overlap = false;
  int servers = 1;
  int ranks_per_node = 1;
  std::string output;
  std::int64_t timeout_ms = kDefaultTimeout.count();
  double link_gbps = 0;  // 0: unshaped
  double latency_us = 0;
  int zero = 0;  // the ZeRO stage; a bare --zero is 2
  std::string transport = "inproc";
};

// Errors name the flag that set the value.
std::string flag_of(const std::string& key) {
  if (key == "model") return "--profile";
  if (key == "overlap") return "--no-overlap";
  std::string flag = "--" + key;
  for (char& c : flag) c = c == '_' ? '-' : c;
  return flag;
}

struct Setup {
  SchemeOptions options;
  RankTransport transport;
};

// --link-gbps's network for a run of `endpoints` endpoints: the workers,
// then the servers.
std::optional<Topology> shaping_for(const TrainFlags& f, int endpoints) {
  if (f.link_gbps <= 0) return std::nullopt;
  const LinkSpec link{f.link_gbps * 1e9, f.latency_us * 1e-6};
  return Topology::grouped(f.workers, f.ranks_per_node, endpoints - f.workers, link, link);
}

Setup setup_for(const TrainFlags& f, const std::string& scheme) {
  Setup s;
  s.options.workers = f.workers;
  s.options.servers = f.servers;
  s.options.ranks_per_node = f.ranks_per_node;
  s.transport.name = f.transport;
  s.transport.options.timeout = std::chrono::milliseconds(f.timeout_ms);
  s.transport.options.shaping = shaping_for(f, make_scheme(scheme, s.options)->endpoints());
  return s;
}

TrainOutputs outputs_of(const TrainFlags& f, const TrainJob& job, const Trace& trace) {
  TrainOutputs w;
  w.config = job.config_json();
  w.config.update({{"workers", f.workers}, {"servers", f.servers}, {"link_gbps", f.link_gbps},
                   {"latency_us", f.latency_us}, {"straggler_ms", f.w.straggler_ms}});
  w.folder = f.output;
  w.trace = &trace;
  w.trace_path = job.workload().trace;
  return w;
}

// --no-sync-baseline: the same training with the exchange skipped, over
// `scheme` (which then only broadcasts the initial parameters).
void add_no_sync_baseline(const TrainFlags& f, const TrainJob& job, const std::string& scheme,
                          TrainOutcome& o) {
  if (!job.workload().no_sync_baseline) return;
  std::cout << "# " << kNoSyncRun << " baseline (exchange skipped)\n" << std::flush;
  const Setup setup = setup_for(f, scheme);
  TrainResult r = run_training(scheme, setup.options, no_sync_baseline(job.config()),
                               job.source(f.workers), setup.transport);
  o.runs.push_back({kNoSyncRun, f.workers, std::move(r)});
}

int run_ps_training(const TrainFlags& f, const TrainJob& job) {
  TrainOutcome o;
  for (const std::string& name : f.w.consistency) {
    const Consistency c = parse_consistency(name, "--consistency");
    const std::string label = consistency_label(c, f.w.staleness);
    std::cout << "# parameter server, " << label << ", " << f.servers << " server(s)\n"
              << std::flush;
    RankTransport transport{f.transport, {}};
    transport.options.timeout = std::chrono::milliseconds(f.timeout_ms);
    transport.options.shaping = shaping_for(f, f.workers + f.servers);
    PsTrainResult r = job.train_parameter_server(
        c, f.workers, f.servers, transport,
        [&](const EpochRecord& e) { print_epoch(std::cout, label, e); });
    o.staleness_table += staleness_row(label, f.servers, r);
    o.staleness.push_back(staleness_json(label, r));
    o.runs.push_back({"ps_" + label, f.workers, std::move(r.train)});
  }
  const Trace none;
  TrainOutputs outputs = outputs_of(f, job, none);
  outputs.trace = nullptr;  // PS consistency training records no timeline
  return finish_training(std::cout, o, outputs);
}

// A profiled workload: emulated compute, real exchanges, optionally over
// shaped links; compares overlap on and off for each scheme.
int run_profiled(const TrainFlags& f, const TrainJob& job, const std::vector<std::string>& schemes) {
  std::cout << "# " << job.describe() << "; links "
            << (f.link_gbps > 0 ? std::to_string(f.link_gbps) + " GB/s" : "unshaped") << "\n";
  TrainOutcome o;
  Trace trace;
  for (const std::string& s : schemes) {
    const Setup setup = setup_for(f, s);
    for (bool overlap : {false, true}) {
      TrainConfig cc = job.config();
      cc.overlap = overlap;
      // Trace only the overlapped run: the one whose timeline shows buckets
      // under the backward pass.
      const bool traced = overlap && !f.w.trace.empty() && s == schemes.front();
      cc.trace_steps = traced ? f.w.trace_steps : 0;
      TrainResult r = run_training(s, setup.options, cc, job.source(f.workers), setup.transport,
                                   traced ? &trace : nullptr);
      o.runs.push_back({run_label(s, cc) + (overlap ? " overlap" : " no-overlap"), f.workers,
                        std::move(r)});
    }
  }
  add_no_sync_baseline(f, job, schemes.front(), o);
  return finish_training(std::cout, o, outputs_of(f, job, trace));
}

// A flag the run would not read is an error, never ignored.
void refuse_flags_that_do_not_apply(const TrainFlags& f, const CLI::App& cmd) {
  const auto given = [&](const char* flag) { return cmd.count(flag) > 0; };
  bool known = false;
  std::string names;
  for (std::string_view t : kTransportNames) {
    known = known || t == f.transport;
    names += (names.empty() ? "" : ", ") + std::string(t);
  }
  if (!known) {
    throw ConfigError("--transport", "unknown transport '" + f.transport + "' (known: " + names + ")");
  }
  if (f.transport == "sim" && given("--timeout-ms")) {
    throw ConfigError("--timeout-ms", "does not apply to --transport sim, whose waits end or "
                                      "deadlock on virtual time");
  }
  if (f.transport != "sim" && f.w.straggler_ms >= static_cast<double>(f.timeout_ms)) {
    throw ConfigError("--straggler-ms", "must be below --timeout-ms (" +
                                            std::to_string(f.timeout_ms) +
                                            "): the other workers' waits would time out");
  }
  const auto& c = f.w.consistency;
  // PS consistency training replaces the schemes: whole f32 gradients go to
  // servers that run the optimizer; no buckets, hooks or timeline.
  for (const char* flag : {"--scheme", "--compression", "--bucket-mb", "--first-bucket-mb",
                           "--no-overlap", "--trace", "--zero"}) {
    if (given(flag) && !c.empty()) {
      throw ConfigError(flag, "does not apply to --consistency (PS training through servers "
                              "that run the optimizer)");
    }
  }
  // By name: -s all runs every scheme, and auto may run any that needs no
  // servers of its own, so neither refuses.
  const auto some_scheme = [&](const auto& reads) {
    return std::any_of(f.schemes.begin(), f.schemes.end(), [&](const std::string& s) {
      return s == "all" || s == "auto" || reads(s);
    });
  };
  if (given("--servers") && c.empty() &&
      !some_scheme([](const std::string& s) { return s.rfind("ps", 0) == 0; })) {
    throw ConfigError("--servers", "applies to the ps schemes and --consistency only");
  }
  if (given("--ranks-per-node") && !given("--link-gbps") &&
      !some_scheme([](const std::string& s) { return find_scheme(s, "--scheme").reads_ranks_per_node; })) {
    throw ConfigError("--ranks-per-node", "applies to shaped links (--link-gbps) and to the "
                                          "schemes built on nodes (" + node_scheme_names() + ") only");
  }
  for (const char* flag : {"--bucket-mb", "--first-bucket-mb"}) {
    if (given(flag) && f.zero == 3) {
      throw ConfigError(flag, "does not apply under --zero=3 (its units are its buckets: "
                              "--unit-mb)");
    }
  }
  if (given("--unit-mb") && f.zero != 3) {
    throw ConfigError("--unit-mb", "applies under --zero=3 only (ZeRO-3's units)");
  }
  if (given("--staleness") && std::find(c.begin(), c.end(), "ssp") == c.end()) {
    throw ConfigError("--staleness", "applies to --consistency ssp only");
  }
  if (given("--latency-us") && !given("--link-gbps")) {
    throw ConfigError("--latency-us", "applies to shaped links (--link-gbps) only");
  }
  if (given("--trace-steps") && !given("--trace")) {
    throw ConfigError("--trace-steps", "applies with --trace only");
  }
  const bool profiled = given("--profile");
  for (const char* flag : {"--fwd-ms", "--bwd-ratio", "--param-scale"}) {
    if (given(flag) && !profiled) throw ConfigError(flag, "applies to --profile workloads only");
  }
  // A profiled workload emulates compute: no layers, no data, no optimizer.
  for (const char* flag : {"--layers", "--data-dir", "--train-samples", "--optimizer", "--lr",
                           "--momentum", "--consistency"}) {
    if (given(flag) && profiled) throw ConfigError(flag, "does not apply to --profile workloads");
  }
}

// The flags given are read as a scenario's "workload" with the same keys
// would be, by the one reader of those fields (config/workload.h): a value
// out of its field's range is refused naming the flag, where CLI11 alone
// let --lr -1 through to train at the optimizer's default rate.
void check_as_a_workload(const TrainWorkload& w, const CLI::App& cmd) {
  nlohmann::json doc = {{"kind", "train"}};
  const auto put = [&](const std::string& key, const auto& value) {
    if (cmd.count(flag_of(key)) > 0) doc[key] = value;
  };
  put("model", w.model);
  put("layers", w.layers);
  put("optimizer", w.optimizer);
  put("lr", w.lr);
  put("momentum", w.momentum);
  put("batch", w.batch);
  put("accumulate", w.accumulate);
  put("epochs", w.epochs);
  put("max_steps", w.max_steps);
  put("seed", w.seed);
  put("bucket_mb", w.bucket_mb);
  put("first_bucket_mb", w.first_bucket_mb);
  put("unit_mb", w.unit_mb);
  put("compression", w.compression);
  put("train_samples", w.train_samples);
  put("trace", w.trace);
  put("trace_steps", w.trace_steps);
  put("fwd_ms", w.fwd_ms);
  put("bwd_ratio", w.bwd_ratio);
  put("param_scale", w.param_scale);
  put("consistency", w.consistency);
  put("staleness", w.staleness);
  put("no_sync_baseline", w.no_sync_baseline);
  try {
    parse_workload(doc, "");
  } catch (const ConfigError& e) {
    // "/lr", or "/consistency/1" for one element of a list.
    if (e.field().size() < 2 || e.field()[0] != '/') throw;
    const std::string key = e.field().substr(1, e.field().find('/', 1) - 1);
    throw ConfigError(flag_of(key), e.reason());
  }
}

}  // namespace

Command add_train_command(CLI::App& parent) {
  auto f = std::make_shared<TrainFlags>();
  TrainWorkload& w = f->w;
  CLI::App* cmd = parent.add_subcommand(
      "train", "train an MLP on Fashion-MNIST, data-parallel, under each given scheme");
  cmd->add_option("-s,--scheme", f->schemes, "schemes to compare (registry names, or 'all')");
  cmd->add_option("-w,--workers", f->workers, "data-parallel workers (threads)");
  cmd->add_option("--layers", w.layers, "hidden layer sizes, e.g. 256-256 (empty: linear)");
  cmd->add_option("--optimizer", w.optimizer, "sgd (with momentum) or adam");
  cmd->add_option("--lr", w.lr, "learning rate (default 0.05 for sgd, 0.001 for adam)");
  cmd->add_option("--momentum", w.momentum, "sgd momentum");
  cmd->add_option("-b,--batch", w.batch, "samples per worker per micro-batch");
  cmd->add_option("--accumulate", w.accumulate,
                  "micro-batches per optimizer step (no_sync accumulation)");
  cmd->add_option("-e,--epochs", w.epochs, "epochs");
  cmd->add_option("--max-steps", w.max_steps, "optimizer steps per epoch at most");
  cmd->add_option("--seed", w.seed, "seed of initialisation and shuffling");
  cmd->add_option("--bucket-mb", w.bucket_mb,
                  "a bucket closes once it holds this many MiB (DDP's bucket_cap_mb: 25)");
  cmd->add_option("--first-bucket-mb", w.first_bucket_mb,
                  "the first bucket's cap, the last layers' (DDP: 1)");
  cmd->add_option("--unit-mb", w.unit_mb,
                  "ZeRO-3: layers wrapped into units of at least this many MiB (FSDP's "
                  "size-based auto-wrap; default: one unit per layer)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--no-overlap", f->no_overlap, "exchange buckets only after backward ends");
  cmd->add_option("--compression", w.compression, "gradient compression hook: none, fp16, bf16");
  cmd->add_option("--data-dir", w.data_dir, "folder with the Fashion-MNIST IDX files");
  cmd->add_option("--train-samples", w.train_samples, "use only the first N training samples");
  cmd->add_option("--servers", f->servers, "parameter-server shards (ps schemes)");
  cmd->add_option("--ranks-per-node", f->ranks_per_node, "workers per node (hierarchical)");
  cmd->add_option("-o,--output", f->output, "folder for results.csv and results.json");
  cmd->add_option("--trace", w.trace, "write a Chrome trace (JSON) of the first steps here");
  cmd->add_option("--trace-steps", w.trace_steps, "steps of epoch 1 the trace records");
  // The scenario's "timeout_ms": same unit, same default, same range.
  cmd->add_option("--timeout-ms", f->timeout_ms, "milliseconds any single wait may block")
      ->check(CLI::Range(std::int64_t{1}, kMaxTimeoutMs));
  cmd->add_option("--transport", f->transport,
                  "where the workers run: inproc (threads, the default), tcp or zmq (threads "
                  "over loopback), sim (fibers on virtual time, compute measured and charged)");
  cmd->add_option("--consistency", w.consistency,
                  "train through PS servers that run the optimizer, under each of bsp, asp, ssp "
                  "(instead of --scheme)");
  cmd->add_option("--profile", w.model,
                  "emulated workload instead of the MLP: resnet50, vgg16, bert_base, gpt2_small "
                  "(runs each scheme with overlap off and on)");
  cmd->add_option("--fwd-ms", w.fwd_ms, "profiled: forward time of one micro-batch (ms)");
  cmd->add_option("--bwd-ratio", w.bwd_ratio, "profiled: backward time / forward time");
  cmd->add_option("--param-scale", w.param_scale,
                  "profiled: gradient elements per parameter (shrink with the link rate)");
  cmd->add_option("--link-gbps", f->link_gbps, "shape every link to this many GB/s (0: unshaped)");
  cmd->add_option("--latency-us", f->latency_us, "shaped links' latency in microseconds");
  cmd->add_flag("--zero{2}", f->zero,
                "ZeRO-2 (--zero): reduce-scatter each bucket, each worker steps its shard with "
                "shard-sized optimizer state, then all-gathers the parameters; ZeRO-3 "
                "(--zero=3): the parameters sharded too, each layer gathered before its forward "
                "and backward (schemes that provide reduce_scatter and all_gather)");
  cmd->add_option("--staleness", w.staleness, "SSP's staleness bound s, in steps");
  cmd->add_flag("--no-sync-baseline", w.no_sync_baseline,
                "also train with the exchange skipped (torch's no_sync) and report comm-share "
                "= 1 - no-sync step / step");
  cmd->add_option("--straggler-ms", w.straggler_ms,
                  "the last worker starts every step this many ms late (any scheme; on the "
                  "simulator in virtual time)")
      ->check(CLI::NonNegativeNumber);
  return {cmd, [f, cmd] {
            refuse_flags_that_do_not_apply(*f, *cmd);
            check_as_a_workload(f->w, *cmd);
            // Where the run writes, checked before it trains for minutes.
            if (!f->output.empty()) check_output_folder(f->output, "-o");
            if (!f->w.trace.empty()) check_output_file(f->w.trace, "--trace");
            check_link_range({f->link_gbps * 1e9, f->latency_us * 1e-6}, "--link-gbps",
                             "--latency-us");
            TrainWorkload w = f->w;
            w.overlap = !f->no_overlap;
            if (f->zero != 0) w.zero = f->zero;
            const auto shards = [&](const std::string& s) {
              return shards_training(*make_scheme(s, setup_for(*f, s).options));
            };
            std::vector<std::string> schemes;
            for (const std::string& s : f->schemes) {
              if (s == "all") {
                // The MPI baselines need mpirun, which `gradex train` is
                // not; under --zero, all the schemes that can shard.
                for (const std::string& name : portable_scheme_names()) {
                  if (w.zero == 0 || shards(name)) schemes.push_back(name);
                }
              } else {
                find_scheme(s, "--scheme");
                schemes.push_back(s);
              }
            }
            const bool profiled = !w.model.empty();
            if (profiled) {
              w.epochs = 1;  // a profiled run is its --max-steps steps (default 20)
            } else {
              w.model = "mlp";
              std::cout << "# loading Fashion-MNIST from " << w.data_dir << "\n" << std::flush;
            }
            check_train_workload(w, flag_of);
            check_train_memory(w, f->workers, f->transport, flag_of);
            for (const std::string& s : schemes) {
              const auto scheme = make_scheme(s, setup_for(*f, s).options);
              check_zero(w.zero, *scheme, s, "--zero");
            }
            std::cout << provenance_line() << "\n";
            const TrainJob job(std::move(w), flag_of);
            job.check_worker_counts({f->workers}, flag_of);
            if (profiled) return run_profiled(*f, job, schemes);
            std::cout << "# " << job.describe() << ", " << f->workers << " workers\n";
            if (!job.workload().consistency.empty()) return run_ps_training(*f, job);

            TrainOutcome o;
            Trace trace;
            for (const std::string& s : schemes) {
              const std::string label = run_label(s, job.config());
              std::cout << "# " << label << "\n" << std::flush;
              const Setup setup = setup_for(*f, s);
              TrainResult r = run_training(
                  s, setup.options, job.config(), job.source(f->workers), setup.transport,
                  job.workload().trace.empty() ? nullptr : &trace,
                  [&](const EpochRecord& e) { print_epoch(std::cout, label, e); });
              o.runs.push_back({label, f->workers, std::move(r)});
            }
            add_no_sync_baseline(*f, job, schemes.front(), o);
            return finish_training(std::cout, o, outputs_of(*f, job, trace));
          }};
}

}  // namespace gradex::cli
