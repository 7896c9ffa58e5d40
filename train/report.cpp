#include "train/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>

#include "common/units.h"

namespace gradex {

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

void print_epoch(std::ostream& out, const std::string& scheme, const EpochRecord& e) {
  out << "  " << scheme << " epoch " << e.epoch << ": ";
  if (e.train_loss) out << "train loss " << fmt("%.4f", *e.train_loss) << ", ";
  if (e.test_loss) out << "test loss " << fmt("%.4f", *e.test_loss) << ", ";
  if (e.test_accuracy) out << "test accuracy " << fmt("%.2f%%", 100 * *e.test_accuracy) << ", ";
  if (!e.train_loss) out << "no loss (emulated compute), ";
  out << fmt("%.2f", e.train_seconds) << " s training\n" << std::flush;
}

double compute_share(const TrainResult& t) {
  return t.mean.iteration > 0 ? t.mean.compute / t.mean.iteration : 0;
}

std::optional<double> comm_share(const std::vector<TrainRun>& runs, const TrainRun& run) {
  if (!run.result.synchronised || run.result.mean.iteration <= 0) return std::nullopt;
  for (const TrainRun& base : runs) {
    if (!base.result.synchronised && base.workers == run.workers) {
      return 1 - base.result.mean.iteration / run.result.mean.iteration;
    }
  }
  return std::nullopt;
}

std::optional<double> scaling_efficiency(const std::vector<TrainRun>& runs, const TrainRun& run) {
  double best = 0;
  for (const TrainRun& one : runs) {
    if (one.workers == 1 && one.result.synchronised) {
      best = std::max(best, one.result.samples_per_second);
    }
  }
  if (best <= 0) return std::nullopt;
  return run.result.samples_per_second / (run.workers * best);
}

bool wire_matches_declared(const TrainResult& t) {
  if (!t.wire || !t.declared) return true;
  const auto same = [](double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(a, b); };
  return same(t.wire->sent, t.declared->sent) && same(t.wire->received, t.declared->received);
}

namespace {

// "12 KiB", or "-" when not known.
std::string bytes_or_dash(const std::optional<StepTraffic>& t) {
  return t ? format_bytes(t->sent) : "-";
}

std::string percent_or_dash(const std::optional<double>& v) {
  return v ? fmt("%.1f%%", 100 * *v) : "-";
}

const char* agreement(const TrainResult& t) {
  if (!t.synchronised) return "-";  // the no-sync baseline diverges by design
  if (!t.payloads) return "-";      // sizes only: nothing to compare
  return t.replicas_agree ? "yes" : "NO";
}

void print_bucket_spans(std::ostream& out, const std::vector<TrainRun>& runs) {
  bool header = false;
  for (const TrainRun& r : runs) {
    for (std::size_t b = 0; b < r.result.bucket_spans.size(); ++b) {
      if (!header) {
        out << "#\n# bucket exchanges: start and end in ms from the start of the step, mean "
               "over steps and workers\n"
               "# scheme                 workers  bucket        bytes  start-ms    end-ms\n";
        header = true;
      }
      const BucketSpan& s = r.result.bucket_spans[b];
      char line[256];
      std::snprintf(line, sizeof line, "  %-22s %7d  %6zu  %11s  %8.3f  %8.3f\n",
                    r.scheme.c_str(), r.workers, b, format_bytes(static_cast<double>(s.bytes)).c_str(),
                    1e3 * s.start, 1e3 * s.end);
      out << line;
    }
  }
}

// Worker 0's memory figures that the run measured: the most bytes of
// parameters and of gradients it held at once, its optimizer state, the
// reduced gradients it keeps after the exchange, and the peak resident
// size of a worker's process (PS consistency runs, whose servers hold the
// optimizer, report none).
void print_memory(std::ostream& out, const std::vector<TrainRun>& runs) {
  bool header = false;
  for (const TrainRun& r : runs) {
    const TrainResult& t = r.result;
    if (!t.synchronised || t.reduced_gradient_bytes <= 0) continue;
    if (!header) {
      out << "#\n# memory per worker (worker 0): parameters and gradients held at most at once "
             "(ZeRO-3: the shard and the layers gathered or in flight), optimizer state, the "
             "reduced gradients kept after the exchange; process-peak: the largest peak "
             "resident size of a worker's process (ranks that are threads of one process "
             "share it)\n"
             "# scheme                 workers  zero       params    gradients  optimizer-state  "
             "reduced-gradients  process-peak\n";
      header = true;
    }
    char line[320];
    std::snprintf(line, sizeof line, "  %-22s %7d  %4d  %11s  %11s  %15s  %17s  %12s\n",
                  r.scheme.c_str(), r.workers, t.zero, format_bytes(t.parameter_bytes).c_str(),
                  format_bytes(t.gradient_bytes).c_str(),
                  format_bytes(t.optimizer_state_bytes).c_str(),
                  format_bytes(t.reduced_gradient_bytes).c_str(),
                  t.peak_resident_bytes > 0 ? format_bytes(t.peak_resident_bytes).c_str() : "-");
    out << line;
  }
}

}  // namespace

void print_train_summary(std::ostream& out, const std::vector<TrainRun>& runs) {
  out << "#\n# scheme                 workers  test-acc  train-s   iter-ms  compute-ms  comm-ms  "
         "exposed-ms  samples/s  compute-share  comm-share  scaling  wire-sent/step  "
         "declared/step  agree\n"
         "# (wire: bytes one worker sent per step, counted; comm-share = 1 - no-sync step / "
         "step; scaling = samples/s / (workers x the fastest one-worker samples/s of any "
         "scheme here))\n";
  for (const TrainRun& r : runs) {
    const TrainResult& t = r.result;
    const std::optional<double> acc =
        t.epochs.empty() ? std::nullopt : t.epochs.back().test_accuracy;
    const double secs = t.epochs.empty() ? 0 : t.epochs.back().train_seconds;
    char accuracy[32] = "       -";
    if (acc) std::snprintf(accuracy, sizeof accuracy, "%7.2f%%", 100 * *acc);
    char line[384];
    std::snprintf(line, sizeof line,
                  "  %-22s %3d  %s  %7.2f  %8.3f  %10.3f  %7.3f  %10.3f  %9.0f  %12.1f%%  %10s  "
                  "%7s  %14s  %13s  %s\n",
                  r.scheme.c_str(), r.workers, accuracy, secs, 1e3 * t.mean.iteration,
                  1e3 * t.mean.compute, 1e3 * t.mean.comm, 1e3 * t.mean.exposed,
                  t.samples_per_second, 100 * compute_share(t),
                  percent_or_dash(comm_share(runs, r)).c_str(),
                  percent_or_dash(scaling_efficiency(runs, r)).c_str(),
                  bytes_or_dash(t.wire).c_str(), bytes_or_dash(t.declared).c_str(), agreement(t));
    out << line;
  }
  for (const TrainRun& r : runs) {
    if (!wire_matches_declared(r.result)) {
      out << "# " << r.scheme << ": the bytes counted on the wire differ from the declared ("
          << r.result.wire->sent << " sent, " << r.result.wire->received << " received per step "
          << "against " << r.result.declared->sent << " and " << r.result.declared->received
          << ")\n";
    }
  }
  print_bucket_spans(out, runs);
  print_memory(out, runs);
}

namespace {

// A CSV cell: the value, or empty when unknown. Byte counts keep 15
// digits, to stay exact; losses the stream's 6.
std::string cell(const std::optional<double>& v, int digits = 15) {
  if (!v) return {};
  std::ostringstream s;
  s.precision(digits);
  s << *v;
  return s.str();
}

std::optional<double> sent(const std::optional<StepTraffic>& t) {
  return t ? std::optional<double>(t->sent) : std::nullopt;
}

std::optional<double> received(const std::optional<StepTraffic>& t) {
  return t ? std::optional<double>(t->received) : std::nullopt;
}

nlohmann::json json_or_null(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}

}  // namespace

std::string train_csv(const std::vector<TrainRun>& runs) {
  std::ostringstream out;
  out << "scheme,workers,params,buckets,epoch,train_loss,test_loss,test_accuracy,train_seconds,"
         "iteration_s,compute_s,comm_s,exposed_s,samples_per_s,replicas_agree,synchronised,"
         "wire_bytes_sent_per_step,wire_bytes_received_per_step,declared_bytes_sent_per_step,"
         "declared_bytes_received_per_step,comm_share,scaling_efficiency\n";
  for (const TrainRun& r : runs) {
    const TrainResult& t = r.result;
    for (const EpochRecord& e : t.epochs) {
      out << r.scheme << ',' << r.workers << ',' << t.param_count << ',' << t.buckets << ','
          << e.epoch << ',' << cell(e.train_loss, 6) << ',' << cell(e.test_loss, 6) << ','
          << cell(e.test_accuracy, 6) << ','
          << e.train_seconds << ',' << t.mean.iteration << ',' << t.mean.compute << ','
          << t.mean.comm << ',' << t.mean.exposed << ',' << t.samples_per_second << ','
          << (t.payloads ? (t.replicas_agree ? "1" : "0") : "") << ',' << (t.synchronised ? 1 : 0)
          << ','
          << cell(sent(t.wire)) << ',' << cell(received(t.wire)) << ','
          << cell(sent(t.declared)) << ',' << cell(received(t.declared)) << ','
          << cell(comm_share(runs, r)) << ',' << cell(scaling_efficiency(runs, r)) << '\n';
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
                        {"train_loss", json_or_null(e.train_loss)},
                        {"test_loss", json_or_null(e.test_loss)},
                        {"test_accuracy", json_or_null(e.test_accuracy)},
                        {"train_seconds", e.train_seconds}});
    }
    nlohmann::json spans = nlohmann::json::array();
    for (std::size_t b = 0; b < t.bucket_spans.size(); ++b) {
      const BucketSpan& s = t.bucket_spans[b];
      spans.push_back({{"bucket", b}, {"bytes", s.bytes}, {"start_s", s.start}, {"end_s", s.end}});
    }
    out["runs"].push_back({{"scheme", r.scheme},
                           {"workers", r.workers},
                           {"params", t.param_count},
                           {"buckets", t.buckets},
                           {"steps", t.steps},
                           {"synchronised", t.synchronised},
                           {"iteration_s", t.mean.iteration},
                           {"compute_s", t.mean.compute},
                           {"comm_s", t.mean.comm},
                           {"exposed_s", t.mean.exposed},
                           {"samples_per_s", t.samples_per_second},
                           {"compute_share", compute_share(t)},
                           // null without a no-sync baseline with as many workers
                           {"comm_share", json_or_null(comm_share(runs, r))},
                           // null without a one-worker run
                           {"scaling_efficiency", json_or_null(scaling_efficiency(runs, r))},
                           {"wire_bytes_sent_per_step", json_or_null(sent(t.wire))},
                           {"wire_bytes_received_per_step", json_or_null(received(t.wire))},
                           {"declared_bytes_sent_per_step", json_or_null(sent(t.declared))},
                           {"declared_bytes_received_per_step", json_or_null(received(t.declared))},
                           {"wire_matches_declared", wire_matches_declared(t)},
                           {"bucket_spans", spans},
                           {"params_fnv1a", t.params_hash},
                           {"zero", t.zero},
                           {"optimizer_state_bytes_per_worker", t.optimizer_state_bytes},
                           {"reduced_gradient_bytes_per_worker", t.reduced_gradient_bytes},
                           {"parameter_bytes_per_worker", t.parameter_bytes},
                           {"gradient_bytes_per_worker", t.gradient_bytes},
                           {"process_peak_resident_bytes", t.peak_resident_bytes},
                           {"replicas_agree", t.payloads ? nlohmann::json(t.replicas_agree)
                                                         : nlohmann::json(nullptr)},
                           {"epochs", epochs}});
  }
  return out;
}

std::string staleness_header() {
  return "#\n# consistency  servers  final-acc  train-s  mean-staleness  max-staleness  "
         "histogram (gradients by staleness 0,1,2,...; last bin: more)\n";
}

std::string staleness_row(const std::string& label, int servers, const PsTrainResult& r) {
  char accuracy[32] = "        -";
  if (r.final_test_accuracy) {
    std::snprintf(accuracy, sizeof accuracy, "%8.2f%%", 100 * *r.final_test_accuracy);
  }
  char line[160];
  std::snprintf(line, sizeof line, "  %-12s %7d  %s  %7.2f  %14.2f  %13ld  ", label.c_str(),
                servers, accuracy,
                r.train.epochs.empty() ? 0.0 : r.train.epochs.back().train_seconds,
                r.staleness.mean(), r.staleness.max);
  std::string row = line;
  for (long h : r.staleness.histogram) row += std::to_string(h) + ' ';
  return row + '\n';
}

nlohmann::json staleness_json(const std::string& label, const PsTrainResult& r) {
  return {{"consistency", label},
          {"final_test_accuracy", json_or_null(r.final_test_accuracy)},
          {"mean_staleness", r.staleness.mean()},
          {"max_staleness", r.staleness.max},
          {"histogram", r.staleness.histogram}};
}

}  // namespace gradex
