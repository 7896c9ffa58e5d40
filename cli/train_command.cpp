// gradex train: data-parallel training of an MLP on Fashion-MNIST under one
// or more schemes (the same loop, the same data, the same seed), printing
// per-epoch loss and accuracy and a timing summary, and writing results.csv,
// results.json and optionally a Chrome trace of the first steps.
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/command.h"
#include "common/errors.h"
#include "runner/atomic_file.h"
#include "schemes/registry.h"
#include "train/mlp.h"
#include "train/ps_training.h"
#include "train/profiled_model.h"
#include "train/zero.h"
#include "common/topology.h"
#include "train/report.h"
#include "train/trainer.h"

namespace gradex::cli {

namespace {

struct TrainFlags {
  std::vector<std::string> schemes{"ring"};
  int workers = 4;
  std::string layers = "256-256";  // hidden sizes; input and classes come from the data
  std::string optimizer = "sgd";
  float lr = -1;  // per optimizer default when not given
  float momentum = 0.9f;
  int batch = 64;
  int accumulate = 1;
  int epochs = 3;
  long max_steps = -1;
  std::uint64_t seed = 1;
  double bucket_mb = 25;
  bool no_overlap = false;
  std::string compression = "none";
  std::string data_dir = kFashionMnistDir.string();
  std::size_t train_samples = 0;  // 0: all
  int servers = 1;
  int ranks_per_node = 1;
  std::string output;
  std::string trace;
  int trace_steps = 5;
  int timeout_s = 120;
  std::vector<std::string> consistency;  // PS training instead of the schemes
  int staleness = 2;
  double straggler_ms = 0;
  std::string profile;  // emulated workload instead of the MLP
  double fwd_ms = 15;
  double bwd_ratio = 2;
  double param_scale = 1;
  double link_gbps = 0;  // 0: unshaped
  double latency_us = 0;
  bool zero = false;
};

std::vector<int> parse_hidden(const std::string& text) {
  std::vector<int> sizes;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, '-')) {
    try {
      std::size_t used = 0;
      const int v = std::stoi(part, &used);
      if (used != part.size() || v <= 0) throw std::invalid_argument(part);
      sizes.push_back(v);
    } catch (const std::exception&) {
      throw ConfigError("--layers", "'" + text + "' is not a list of positive sizes like 256-256");
    }
  }
  return sizes;
}

int run_ps_training(const TrainFlags& f, const TrainConfig& c, const Dataset& train,
                    const Dataset& test, const InprocOptions& transport) {
  std::vector<TrainRun> runs;
  nlohmann::json staleness = nlohmann::json::array();
  std::ostringstream table;
  table << "#\n# consistency  servers  final-acc  train-s  mean-staleness  max-staleness  "
           "histogram (gradients by staleness 0,1,2,...; last bin: more)\n";
  for (const std::string& name : f.consistency) {
    PsTrainConfig ps;
    ps.consistency = parse_consistency(name, "--consistency");
    ps.staleness = f.staleness;
    ps.servers = f.servers;
    ps.straggler_ms = f.straggler_ms;
    const std::string label =
        ps.consistency == Consistency::ssp ? "ssp(s=" + std::to_string(f.staleness) + ")" : name;
    std::cout << "# parameter server, " << label << ", " << f.servers << " server(s)\n"
              << std::flush;
    PsTrainResult r = train_parameter_server(
        ps, c, f.workers, train, test, transport,
        [&](const EpochRecord& e) { print_epoch(std::cout, label, e); });
    char line[160];
    std::snprintf(line, sizeof line, "  %-12s %7d  %8.2f%%  %7.2f  %14.2f  %13ld  ", label.c_str(),
                  f.servers, 100 * r.final_test_accuracy,
                  r.train.epochs.empty() ? 0.0 : r.train.epochs.back().train_seconds,
                  r.mean_staleness, r.max_staleness);
    table << line;
    for (long h : r.staleness_histogram) table << h << ' ';
    table << '\n';
    staleness.push_back({{"consistency", label},
                         {"final_test_accuracy", r.final_test_accuracy},
                         {"mean_staleness", r.mean_staleness},
                         {"max_staleness", r.max_staleness},
                         {"histogram", r.staleness_histogram}});
    runs.push_back({"ps_" + label, f.workers, std::move(r.train)});
  }
  print_train_summary(std::cout, runs);
  std::cout << table.str();
  if (!f.output.empty()) {
    nlohmann::json config = {{"workers", f.workers},     {"servers", f.servers},
                             {"staleness", f.staleness}, {"straggler_ms", f.straggler_ms},
                             {"layers", c.layers},       {"optimizer", c.optimizer.kind},
                             {"lr", c.optimizer.lr},     {"batch", c.batch},
                             {"epochs", c.epochs},       {"seed", c.seed}};
    nlohmann::json doc = train_json(runs, config);
    doc["staleness"] = staleness;
    std::filesystem::create_directories(f.output);
    write_files_atomically({{std::filesystem::path(f.output) / "results.csv", train_csv(runs)},
                            {std::filesystem::path(f.output) / "results.json", doc.dump(2) + "\n"}});
    std::cout << "# results written to " << f.output << "/results.{csv,json}\n";
  }
  return kExitOk;
}

// A profiled workload: emulated compute, real exchanges, optionally over
// shaped links; compares overlap on and off for each scheme.
int run_profiled(const TrainFlags& f, TrainConfig c, const std::vector<std::string>& schemes) {
  const ModelProfile profile = model_profile(f.profile);
  EmulationConfig emu;
  emu.forward_seconds = f.fwd_ms / 1e3;
  emu.backward_ratio = f.bwd_ratio;
  emu.param_scale = f.param_scale;
  ModelSource source;
  source.make_model = [&] { return std::make_unique<ProfiledModel>(profile, emu); };
  const long steps = c.max_steps > 0 ? c.max_steps : 20;
  c.max_steps = steps;
  c.epochs = 1;
  source.samples = static_cast<std::size_t>(steps) * f.workers * c.batch * c.accumulate;
  const auto probe = source.make_model();
  std::cout << "# profiled " << profile.name << " (" << profile.layers.size() << " layers, "
            << profile.params() / 1e6 << " M parameters, " << profile.forward_flops() / 1e9
            << " GFLOP forward per " << profile.input << "); emulated forward " << f.fwd_ms
            << " ms, backward " << f.fwd_ms * f.bwd_ratio << " ms; gradient "
            << probe->param_count() * 4.0 / 1e6 << " MB (param scale " << f.param_scale
            << "); links " << (f.link_gbps > 0 ? std::to_string(f.link_gbps) + " GB/s" : "unshaped")
            << "; buckets " << c.bucket_bytes / 1048576.0 << " MiB; " << steps << " steps\n";
  std::vector<TrainRun> runs;
  Trace trace;
  for (const std::string& s : schemes) {
    SchemeOptions o;
    o.workers = f.workers;
    o.servers = f.servers;
    o.ranks_per_node = f.ranks_per_node;
    InprocOptions transport;
    transport.timeout = std::chrono::milliseconds(1000L * f.timeout_s);
    if (f.link_gbps > 0) {
      const LinkSpec link{f.link_gbps * 1e9, f.latency_us * 1e-6};
      const int endpoints = make_scheme(s, o)->endpoints();
      transport.shaping = Topology::grouped(f.workers, f.ranks_per_node, endpoints - f.workers,
                                            link, link);
    }
    for (bool overlap : {false, true}) {
      TrainConfig cc = c;
      cc.overlap = overlap;
      // Trace only the overlapped run: the one whose timeline shows buckets
      // under the backward pass.
      const bool traced = overlap && !f.trace.empty() && s == schemes.front();
      cc.trace_steps = traced ? f.trace_steps : 0;
      TrainResult r = train_data_parallel(s, o, cc, source, transport, traced ? &trace : nullptr);
      runs.push_back({s + (overlap ? " overlap" : " no-overlap"), f.workers, std::move(r)});
    }
  }
  print_train_summary(std::cout, runs);
  if (!f.output.empty()) {
    const nlohmann::json config = {{"profile", profile.name},    {"fwd_ms", f.fwd_ms},
                                   {"bwd_ratio", f.bwd_ratio},   {"param_scale", f.param_scale},
                                   {"link_gbps", f.link_gbps},   {"latency_us", f.latency_us},
                                   {"bucket_bytes", c.bucket_bytes}, {"workers", f.workers},
                                   {"steps", steps}};
    std::filesystem::create_directories(f.output);
    write_files_atomically({{std::filesystem::path(f.output) / "results.csv", train_csv(runs)},
                            {std::filesystem::path(f.output) / "results.json",
                             train_json(runs, config).dump(2) + "\n"}});
    std::cout << "# results written to " << f.output << "/results.{csv,json}\n";
  }
  if (!f.trace.empty()) {
    trace.write(f.trace);
    std::cout << "# trace written to " << f.trace << "\n";
  }
  return kExitOk;
}

}  // namespace

Command add_train_command(CLI::App& parent) {
  auto f = std::make_shared<TrainFlags>();
  CLI::App* cmd = parent.add_subcommand(
      "train", "train an MLP on Fashion-MNIST, data-parallel, under each given scheme");
  cmd->add_option("-s,--scheme", f->schemes, "schemes to compare (registry names, or 'all')");
  cmd->add_option("-w,--workers", f->workers, "data-parallel workers (threads)");
  cmd->add_option("--layers", f->layers, "hidden layer sizes, e.g. 256-256 (empty: linear)");
  cmd->add_option("--optimizer", f->optimizer, "sgd (with momentum) or adam");
  cmd->add_option("--lr", f->lr, "learning rate (default 0.05 for sgd, 0.001 for adam)");
  cmd->add_option("--momentum", f->momentum, "sgd momentum");
  cmd->add_option("-b,--batch", f->batch, "samples per worker per micro-batch");
  cmd->add_option("--accumulate", f->accumulate,
                  "micro-batches per optimizer step (no_sync accumulation)");
  cmd->add_option("-e,--epochs", f->epochs, "epochs");
  cmd->add_option("--max-steps", f->max_steps, "optimizer steps per epoch at most");
  cmd->add_option("--seed", f->seed, "seed of initialisation and shuffling");
  cmd->add_option("--bucket-mb", f->bucket_mb, "gradient bucket capacity in MiB (DDP: 25)");
  cmd->add_flag("--no-overlap", f->no_overlap, "exchange buckets only after backward ends");
  cmd->add_option("--compression", f->compression, "gradient compression hook: none, fp16, bf16");
  cmd->add_option("--data-dir", f->data_dir, "folder with the Fashion-MNIST IDX files");
  cmd->add_option("--train-samples", f->train_samples, "use only the first N training samples");
  cmd->add_option("--servers", f->servers, "parameter-server shards (ps schemes)");
  cmd->add_option("--ranks-per-node", f->ranks_per_node, "workers per node (hierarchical)");
  cmd->add_option("-o,--output", f->output, "folder for results.csv and results.json");
  cmd->add_option("--trace", f->trace, "write a Chrome trace (JSON) of the first steps here");
  cmd->add_option("--trace-steps", f->trace_steps, "steps of epoch 1 the trace records");
  cmd->add_option("--timeout", f->timeout_s, "seconds any single wait may block");
  cmd->add_option("--consistency", f->consistency,
                  "train through PS servers that run the optimizer, under each of bsp, asp, ssp "
                  "(instead of --scheme)");
  cmd->add_option("--profile", f->profile,
                  "emulated workload instead of the MLP: resnet50, vgg16, bert_base, gpt2_small "
                  "(runs each scheme with overlap off and on)");
  cmd->add_option("--fwd-ms", f->fwd_ms, "profiled: forward time of one micro-batch (ms)");
  cmd->add_option("--bwd-ratio", f->bwd_ratio, "profiled: backward time / forward time");
  cmd->add_option("--param-scale", f->param_scale,
                  "profiled: gradient elements per parameter (shrink with the link rate)");
  cmd->add_option("--link-gbps", f->link_gbps, "shape every link to this many GB/s (0: unshaped)");
  cmd->add_option("--latency-us", f->latency_us, "shaped links' latency in microseconds");
  cmd->add_flag("--zero", f->zero,
                "also train with ZeRO-2 sharding (ring reduce-scatter, sharded optimizer, "
                "all-gather) and compare optimizer memory");
  cmd->add_option("--staleness", f->staleness, "SSP's staleness bound s, in steps");
  cmd->add_option("--straggler-ms", f->straggler_ms,
                  "PS training: the last worker sleeps this long every step");
  return {cmd, [f] {
            std::vector<std::string> schemes;
            for (const std::string& s : f->schemes) {
              if (s == "all") {
                for (const auto& e : scheme_registry()) schemes.push_back(e.name);
              } else {
                find_scheme(s, "--scheme");
                schemes.push_back(s);
              }
            }
            if (!f->profile.empty()) {
              TrainConfig c;
              c.batch = f->batch;
              c.accumulate = f->accumulate;
              c.max_steps = f->max_steps;
              c.compression = parse_compression(f->compression, "--compression");
              if (!(f->bucket_mb > 0)) throw ConfigError("--bucket-mb", "must be positive");
              c.bucket_bytes = static_cast<std::size_t>(f->bucket_mb * 1024 * 1024);
              c.evaluate = false;
              return run_profiled(*f, c, schemes);
            }
            std::cout << "# loading Fashion-MNIST from " << f->data_dir << "\n" << std::flush;
            Dataset train = load_fashion_mnist(f->data_dir, "train");
            const Dataset test = load_fashion_mnist(f->data_dir, "t10k");
            if (f->train_samples > 0) train = train.head(f->train_samples);

            TrainConfig c;
            c.layers = {train.features()};
            for (int h : f->layers.empty() ? std::vector<int>{} : parse_hidden(f->layers)) {
              c.layers.push_back(h);
            }
            c.layers.push_back(train.classes);
            c.optimizer.kind = f->optimizer;
            c.optimizer.lr = f->lr > 0 ? f->lr : (f->optimizer == "adam" ? 0.001f : 0.05f);
            c.optimizer.momentum = f->momentum;
            c.batch = f->batch;
            c.accumulate = f->accumulate;
            c.epochs = f->epochs;
            c.max_steps = f->max_steps;
            c.seed = f->seed;
            if (!(f->bucket_mb > 0)) throw ConfigError("--bucket-mb", "must be positive");
            c.bucket_bytes = static_cast<std::size_t>(f->bucket_mb * 1024 * 1024);
            c.overlap = !f->no_overlap;
            c.compression = parse_compression(f->compression, "--compression");
            c.trace_steps = f->trace.empty() ? 0 : f->trace_steps;

            SchemeOptions o;
            o.workers = f->workers;
            o.servers = f->servers;
            o.ranks_per_node = f->ranks_per_node;
            InprocOptions transport;
            transport.timeout = std::chrono::milliseconds(1000L * f->timeout_s);

            Mlp shape(c.layers, train);
            std::cout << "# MLP " << describe_layers(c.layers) << " (" << shape.param_count()
                      << " parameters), " << c.optimizer.kind << " lr " << c.optimizer.lr
                      << ", " << f->workers << " workers x batch " << c.batch << " x "
                      << c.accumulate << " micro-batches, " << train.size()
                      << " training samples, " << c.epochs << " epochs, buckets "
                      << f->bucket_mb << " MiB, overlap " << (c.overlap ? "on" : "off")
                      << ", compression " << compression_name(c.compression) << "\n";

            if (!f->consistency.empty()) {
              return run_ps_training(*f, c, train, test, transport);
            }
            std::vector<TrainRun> runs;
            Trace trace;
            for (const std::string& s : schemes) {
              std::cout << "# " << s << "\n" << std::flush;
              TrainResult r = train_data_parallel(
                  s, o, c, train, test, transport, f->trace.empty() ? nullptr : &trace,
                  [&](const EpochRecord& e) { print_epoch(std::cout, s, e); });
              runs.push_back({s, f->workers, std::move(r)});
            }
            if (f->zero) {
              std::cout << "# zero (sharded optimizer)\n" << std::flush;
              ZeroResult z = train_zero(c, f->workers, train, test, transport,
                                        [&](const EpochRecord& e) { print_epoch(std::cout, "zero", e); });
              std::cout << "# optimizer state per worker: replicated (DDP) "
                        << z.replicated_state_bytes / 1e6 << " MB, ZeRO (largest shard) "
                        << z.sharded_state_bytes_max / 1e6 << " MB\n";
              runs.push_back({"zero", f->workers, std::move(z.train)});
            }
            print_train_summary(std::cout, runs);
            if (!f->output.empty()) {
              const nlohmann::json config = {
                  {"layers", c.layers},          {"optimizer", c.optimizer.kind},
                  {"lr", c.optimizer.lr},        {"momentum", c.optimizer.momentum},
                  {"batch", c.batch},            {"accumulate", c.accumulate},
                  {"epochs", c.epochs},          {"max_steps", c.max_steps},
                  {"seed", c.seed},              {"bucket_bytes", c.bucket_bytes},
                  {"overlap", c.overlap},        {"compression", compression_name(c.compression)},
                  {"workers", f->workers},       {"train_samples", train.size()}};
              std::filesystem::create_directories(f->output);
              write_files_atomically(
                  {{std::filesystem::path(f->output) / "results.csv", train_csv(runs)},
                   {std::filesystem::path(f->output) / "results.json",
                    train_json(runs, config).dump(2) + "\n"}});
              std::cout << "# results written to " << f->output << "/results.{csv,json}\n";
            }
            if (!f->trace.empty()) {
              trace.write(f->trace);
              std::cout << "# trace written to " << f->trace << "\n";
            }
            for (const TrainRun& r : runs) {
              if (!r.result.replicas_agree) return kExitWrong;
            }
            return kExitOk;
          }};
}

}  // namespace gradex::cli
