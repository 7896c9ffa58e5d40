#include "train/train_job.h"

#include <sstream>

#include "common/errors.h"
#include "common/memory_budget.h"
#include "common/units.h"
#include "transport/local_group.h"
#include "schemes/registry.h"
#include "train/mlp.h"
#include "train/optimizer.h"
#include "train/profiles.h"

namespace gradex {

namespace {

std::vector<int> parse_hidden(const std::string& text, const std::string& field) {
  std::vector<int> sizes;
  if (text.empty()) return sizes;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, '-')) {
    try {
      std::size_t used = 0;
      const int v = std::stoi(part, &used);
      if (used != part.size() || v <= 0) throw std::invalid_argument(part);
      sizes.push_back(v);
    } catch (const std::exception&) {
      throw ConfigError(field, "'" + text + "' is not a list of positive sizes like 256-256");
    }
  }
  return sizes;
}

OptimizerConfig optimizer_config(const TrainWorkload& w) {
  OptimizerConfig o;
  o.kind = w.optimizer;
  o.lr = w.lr > 0 ? static_cast<float>(w.lr) : (w.optimizer == "adam" ? 0.001f : 0.05f);
  o.momentum = static_cast<float>(w.momentum);
  return o;
}

// A profiled run without max_steps takes this many steps (gradex train's default).
constexpr long kProfiledSteps = 20;

}  // namespace

FieldNamer workload_pointer() {
  return [](const std::string& key) { return "/workload/" + key; };
}

void check_train_workload(const TrainWorkload& w, const FieldNamer& field) {
  if (w.model != "mlp") {
    try {
      model_profile(w.model);
    } catch (const ConfigError& e) {
      throw ConfigError(field("model"), e.reason() + " (or \"mlp\")");
    }
    if (!w.consistency.empty()) {
      throw ConfigError(field("consistency"), "PS consistency training trains the MLP only");
    }
  }
  parse_hidden(w.layers, field("layers"));
  try {
    make_optimizer(optimizer_config(w), 0);
  } catch (const ConfigError& e) {
    const std::string key = e.field() == "optimizer.lr"         ? "lr"
                            : e.field() == "optimizer.momentum" ? "momentum"
                                                                : "optimizer";
    throw ConfigError(field(key), e.reason());
  }
  parse_compression(w.compression, field("compression"));
  // The loop's own check of the stage, named as the caller names it.
  try {
    check_zero_stage(w.zero);
  } catch (const ConfigError& e) {
    throw ConfigError(field(e.field()), e.reason());
  }
  if (!w.consistency.empty() && w.zero != 0) {
    throw ConfigError(field("zero"), "does not apply to PS consistency training (its servers "
                                     "run the optimizer)");
  }
  if (!(w.bucket_mb > 0)) throw ConfigError(field("bucket_mb"), "must be positive");
  if (!(w.first_bucket_mb > 0)) throw ConfigError(field("first_bucket_mb"), "must be positive");
  for (const std::string& c : w.consistency) parse_consistency(c, field("consistency"));
  if (!w.consistency.empty() && w.no_sync_baseline) {
    throw ConfigError(field("no_sync_baseline"),
                      "does not apply to PS consistency training: its servers run the "
                      "optimizer, so there is no gradient exchange to skip");
  }
  if (!w.consistency.empty() && w.accumulate != 1) {
    throw ConfigError(field("accumulate"), "PS consistency training takes one batch a step");
  }
}

void check_train_memory(const TrainWorkload& w, int ranks_here, const std::string& transport,
                        const FieldNamer& field) {
  // A profiled model on the simulator holds no buffers (sizes only).
  if (carries_sizes_only(transport, w.model != "mlp")) return;
  constexpr double kFloat = 4;
  // Per worker: weights, gradients, the exchange's flat copy of them and up
  // to two optimizer moments for every parameter, plus (MLP) each layer's
  // activations and their gradients for one micro-batch.
  constexpr double kCopiesPerParam = 5;
  double params = 0, activations = 0;
  std::string driver;
  if (w.model != "mlp") {
    params = model_profile(w.model).params() * w.param_scale;
    driver = "param_scale";
  } else {
    std::vector<double> widths = {kFashionMnistFeatures};
    for (int h : parse_hidden(w.layers, field("layers"))) widths.push_back(h);
    widths.push_back(kFashionMnistClasses);
    for (std::size_t i = 0; i + 1 < widths.size(); ++i) params += (widths[i] + 1) * widths[i + 1];
    double width_sum = 0;
    for (double x : widths) width_sum += x;
    activations = 2 * w.batch * width_sum;
    driver = activations > kCopiesPerParam * params ? "batch" : "layers";
  }
  const double per_worker = kFloat * (kCopiesPerParam * params + activations);
  check_memory_fits(per_worker * ranks_here, field(driver),
                    format_bytes(per_worker) + " per worker for " +
                        std::to_string(static_cast<long long>(params)) + " parameters" +
                        (activations > 0 ? " and a batch of " + std::to_string(w.batch) : "") +
                        ", x " + std::to_string(ranks_here) + " workers on this machine");
}

TrainJob::TrainJob(TrainWorkload workload, const FieldNamer& field)
    : workload_(std::move(workload)) {
  const TrainWorkload& w = workload_;
  check_train_workload(w, field);
  TrainConfig& c = config_;
  c.optimizer = optimizer_config(w);
  c.batch = w.batch;
  c.accumulate = w.accumulate;
  c.epochs = w.epochs;
  c.max_steps = w.max_steps;
  c.seed = w.seed;
  c.bucket_bytes = static_cast<std::size_t>(w.bucket_mb * 1024 * 1024);
  c.first_bucket_bytes = static_cast<std::size_t>(w.first_bucket_mb * 1024 * 1024);
  c.overlap = w.overlap;
  c.compression = parse_compression(w.compression, field("compression"));
  c.trace_steps = w.trace.empty() ? 0 : w.trace_steps;
  c.straggler_ms = w.straggler_ms;
  c.zero = w.zero;
  c.keep_params = false;
  c.unit_bytes = static_cast<std::size_t>(w.unit_mb * 1024 * 1024);  // reports need the hash only: no second copy of the model
  if (w.model != "mlp") {
    profile_ = model_profile(w.model);
    emulation_.forward_seconds = w.fwd_ms / 1e3;
    emulation_.backward_ratio = w.bwd_ratio;
    emulation_.param_scale = w.param_scale;
    if (c.max_steps < 0) c.max_steps = kProfiledSteps;
    c.evaluate = false;  // nothing is learnt
    return;
  }
  const std::filesystem::path dir = w.data_dir.empty() ? kFashionMnistDir : std::filesystem::path(w.data_dir);
  auto train = std::make_shared<Dataset>(load_fashion_mnist(dir, "train"));
  if (w.train_samples > 0) *train = train->head(w.train_samples);
  train_ = std::move(train);
  test_ = std::make_shared<Dataset>(load_fashion_mnist(dir, "t10k"));
  c.layers = {train_->features()};
  for (int h : parse_hidden(w.layers, field("layers"))) c.layers.push_back(h);
  c.layers.push_back(train_->classes);
}

void TrainJob::check_worker_counts(const std::vector<int>& workers,
                                   const FieldNamer& field) const {
  if (!train_) return;  // profiled: no data, the steps are max_steps
  for (int n : workers) {
    try {
      training_steps_per_epoch(config_, train_->size(), n);
    } catch (const ConfigError& e) {
      throw ConfigError(field(e.field()), e.reason() + " (with " + std::to_string(n) + " workers)");
    }
  }
}

std::string TrainJob::describe() const {
  const TrainConfig& c = config_;
  std::ostringstream out;
  if (profile_) {
    const auto probe = source(1).make_model();
    out << "profiled " << profile_->name << " (" << profile_->layers.size() << " layers, "
        << profile_->params() / 1e6 << " M parameters, " << profile_->forward_flops() / 1e9
        << " GFLOP forward per " << profile_->input << "); emulated forward " << workload_.fwd_ms
        << " ms, backward " << workload_.fwd_ms * workload_.bwd_ratio << " ms; gradient "
        << probe->param_count() * 4.0 / 1e6 << " MB (param scale " << workload_.param_scale
        << "); batch " << c.batch << " x " << c.accumulate << " micro-batches per worker, "
        << c.max_steps << " steps x " << c.epochs << " epochs";
  } else {
    const Mlp shape(c.layers, *train_);
    out << "MLP " << describe_layers(c.layers) << " (" << shape.param_count() << " parameters), "
        << c.optimizer.kind << " lr " << c.optimizer.lr << ", batch " << c.batch << " x "
        << c.accumulate << " micro-batches per worker, " << train_->size()
        << " training samples, " << c.epochs << " epochs";
    if (c.max_steps >= 0) out << " of at most " << c.max_steps << " steps";
  }
  if (c.zero == 3) {
    out << ", units " << (c.unit_bytes == 0 ? std::string("one per layer")
                                            : std::to_string(workload_.unit_mb) + " MiB");
  } else {
    out << ", buckets " << workload_.bucket_mb << " MiB";
  }
  out << ", overlap " << (c.overlap ? "on" : "off") << ", compression "
      << compression_name(c.compression);
  if (c.zero != 0) out << ", ZeRO-" << c.zero;
  return out.str();
}

ModelSource TrainJob::source(int workers) const {
  ModelSource s;
  if (profile_) {
    const ModelProfile profile = *profile_;
    const EmulationConfig emulation = emulation_;
    s.make_model = [profile, emulation] { return std::make_unique<ProfiledModel>(profile, emulation); };
    s.samples = static_cast<std::size_t>(config_.max_steps) * static_cast<std::size_t>(workers) *
                static_cast<std::size_t>(config_.batch * config_.accumulate);
    s.computes_loss = false;
    return s;
  }
  return mlp_source(config_, train_, test_);
}

nlohmann::json TrainJob::config_json() const {
  const TrainConfig& c = config_;
  nlohmann::json j = {{"model", workload_.model},
                      {"optimizer", c.optimizer.kind},
                      {"lr", c.optimizer.lr},
                      {"momentum", c.optimizer.momentum},
                      {"batch", c.batch},
                      {"accumulate", c.accumulate},
                      {"epochs", c.epochs},
                      {"max_steps", c.max_steps},
                      {"seed", c.seed},
                      {"bucket_bytes", c.bucket_bytes},
                      {"first_bucket_bytes", c.first_bucket_bytes},
                      {"overlap", c.overlap},
                      {"compression", compression_name(c.compression)},
                      {"zero", c.zero}};
  if (profile_) {
    j.update({{"profile", profile_->name},
              {"fwd_ms", workload_.fwd_ms},
              {"bwd_ratio", workload_.bwd_ratio},
              {"param_scale", workload_.param_scale}});
  } else {
    j.update({{"layers", c.layers}, {"train_samples", train_->size()}});
  }
  if (!workload_.consistency.empty()) j["staleness"] = workload_.staleness;
  if (c.straggler_ms > 0) j["straggler_ms"] = c.straggler_ms;
  if (workload_.no_sync_baseline) j["no_sync_baseline"] = true;
  return j;
}

PsTrainConfig TrainJob::ps_config(Consistency consistency, int servers) const {
  GRADEX_ENFORCE(!profile_, "PS consistency training needs the MLP");
  PsTrainConfig ps;
  ps.consistency = consistency;
  ps.staleness = workload_.staleness;
  ps.servers = servers;
  return ps;
}

PsTrainResult TrainJob::train_parameter_server(Consistency consistency, int workers, int servers,
                                               const RankTransport& transport,
                                               const EpochCallback& on_epoch) const {
  return gradex::train_parameter_server(ps_config(consistency, servers), config_,
                                        workers, source(workers), transport.name,
                                        transport.options, on_epoch);
}

TrainResult run_training(const std::string& scheme, const SchemeOptions& options,
                         const TrainConfig& config, const ModelSource& source,
                         const RankTransport& transport, Trace* trace,
                         const EpochCallback& on_epoch) {
  return train_data_parallel(scheme, options, config, source, transport.name, transport.options,
                             trace, on_epoch);
}

}  // namespace gradex
