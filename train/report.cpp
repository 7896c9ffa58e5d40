#include "train/report.h"

#include <cstdio>
#include <optional>
#include <sstream>

namespace gradex {

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

void print_epoch(std::ostream& out, const std::string& scheme, const EpochRecord& e) {
  out << "  " << scheme << " epoch " << e.epoch << ": train loss " << fmt("%.4f", e.train_loss)
      << ", test loss " << fmt("%.4f", e.test_loss) << ", test accuracy "
      << fmt("%.2f%%", 100 * e.test_accuracy) << ", " << fmt("%.2f", e.train_seconds)
      << " s training\n"
      << std::flush;
}

double compute_share(const TrainResult& t) {
  return t.mean.iteration > 0 ? t.mean.compute / t.mean.iteration : 0;
}

std::optional<double> scaling_efficiency(const std::vector<TrainRun>& runs, const TrainRun& run) {
  for (const TrainRun& one : runs) {
    if (one.scheme == run.scheme && one.workers == 1 && one.result.samples_per_second > 0) {
      return run.result.samples_per_second / (run.workers * one.result.samples_per_second);
    }
  }
  return std::nullopt;
}

void print_train_summary(std::ostream& out, const std::vector<TrainRun>& runs) {
  out << "#\n# scheme                 workers  test-acc  train-s   iter-ms  compute-ms  comm-ms  "
         "exposed-ms  samples/s  compute-share  scaling  agree\n";
  for (const TrainRun& r : runs) {
    const TrainResult& t = r.result;
    const double acc = t.epochs.empty() ? 0 : t.epochs.back().test_accuracy;
    const double secs = t.epochs.empty() ? 0 : t.epochs.back().train_seconds;
    const bool evaluated = !t.epochs.empty() && (t.epochs.back().test_loss > 0 || acc > 0);
    char accuracy[32] = "       -";
    if (evaluated) std::snprintf(accuracy, sizeof accuracy, "%7.2f%%", 100 * acc);
    char scaling[32] = "      -";
    if (const auto e = scaling_efficiency(runs, r)) {
      std::snprintf(scaling, sizeof scaling, "%6.1f%%", 100 * *e);
    }
    char line[256];
    std::snprintf(line, sizeof line,
                  "  %-22s %3d  %s  %7.2f  %8.3f  %10.3f  %7.3f  %10.3f  %9.0f  %12.1f%%  %s  %s\n",
                  r.scheme.c_str(), r.workers, accuracy, secs, 1e3 * t.mean.iteration,
                  1e3 * t.mean.compute, 1e3 * t.mean.comm, 1e3 * t.mean.exposed,
                  t.samples_per_second, 100 * compute_share(t), scaling,
                  t.replicas_agree ? "yes" : "NO");
    out << line;
  }
}

std::string train_csv(const std::vector<TrainRun>& runs) {
  std::ostringstream out;
  out << "scheme,workers,params,buckets,epoch,train_loss,test_loss,test_accuracy,train_seconds,"
         "iteration_s,compute_s,comm_s,exposed_s,samples_per_s,replicas_agree\n";
  for (const TrainRun& r : runs) {
    const TrainResult& t = r.result;
    for (const EpochRecord& e : t.epochs) {
      out << r.scheme << ',' << r.workers << ',' << t.param_count << ',' << t.buckets << ','
          << e.epoch << ',' << e.train_loss << ',' << e.test_loss << ',' << e.test_accuracy << ','
          << e.train_seconds << ',' << t.mean.iteration << ',' << t.mean.compute << ','
          << t.mean.comm << ',' << t.mean.exposed << ',' << t.samples_per_second << ','
          << (t.replicas_agree ? 1 : 0) << '\n';
    }
  }
  return out.str();
}

nlohmann::json train_json(const std::vector<TrainRun>& runs, const nlohmann::json& config) {
  nlohmann::json out = {{"config", config}, {"runs", nlohmann::json::array()}};
  for (const TrainRun& r : runs) {
    const TrainResult& t = r.result;
    nlohmann::json epochs = nlohmann::json::array();
    for (const EpochRecord& e : t.epochs) {
      epochs.push_back({{"epoch", e.epoch},
                        {"train_loss", e.train_loss},
                        {"test_loss", e.test_loss},
                        {"test_accuracy", e.test_accuracy},
                        {"train_seconds", e.train_seconds}});
    }
    const std::optional<double> scaling = scaling_efficiency(runs, r);
    out["runs"].push_back({{"scheme", r.scheme},
                           {"workers", r.workers},
                           {"params", t.param_count},
                           {"buckets", t.buckets},
                           {"steps", t.steps},
                           {"iteration_s", t.mean.iteration},
                           {"compute_s", t.mean.compute},
                           {"comm_s", t.mean.comm},
                           {"exposed_s", t.mean.exposed},
                           {"samples_per_s", t.samples_per_second},
                           {"compute_share", compute_share(t)},
                           {"scaling_efficiency",  // null without a one-worker run
                            scaling ? nlohmann::json(*scaling) : nlohmann::json()},
                           {"params_fnv1a", t.params_hash},
                           {"optimizer_state_bytes_per_worker", t.optimizer_state_bytes},
                           {"replicas_agree", t.replicas_agree},
                           {"epochs", epochs}});
  }
  return out;
}

std::string staleness_header() {
  return "#\n# consistency  servers  final-acc  train-s  mean-staleness  max-staleness  "
         "histogram (gradients by staleness 0,1,2,...; last bin: more)\n";
}

std::string staleness_row(const std::string& label, int servers, const PsTrainResult& r) {
  char line[160];
  std::snprintf(line, sizeof line, "  %-12s %7d  %8.2f%%  %7.2f  %14.2f  %13ld  ", label.c_str(),
                servers, 100 * r.final_test_accuracy,
                r.train.epochs.empty() ? 0.0 : r.train.epochs.back().train_seconds,
                r.staleness.mean(), r.staleness.max);
  std::string row = line;
  for (long h : r.staleness.histogram) row += std::to_string(h) + ' ';
  return row + '\n';
}

nlohmann::json staleness_json(const std::string& label, const PsTrainResult& r) {
  return {{"consistency", label},
          {"final_test_accuracy", r.final_test_accuracy},
          {"mean_staleness", r.staleness.mean()},
          {"max_staleness", r.staleness.max},
          {"histogram", r.staleness.histogram}};
}

}  // namespace gradex
