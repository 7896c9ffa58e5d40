#include "schemes/auto_scheme.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "common/device_memory.h"
#include "common/errors.h"
#include "schemes/registry.h"

namespace gradex {

namespace {

// "256KiB", "4MiB": a segment size in a label.
std::string segment_label(std::size_t bytes) {
  constexpr std::size_t kKiB = 1024, kMiB = kKiB * 1024;
  if (bytes % kMiB == 0) return std::to_string(bytes / kMiB) + "MiB";
  if (bytes % kKiB == 0) return std::to_string(bytes / kKiB) + "KiB";
  return std::to_string(bytes) + "B";
}

}  // namespace

AutoScheme::AutoScheme(SchemeOptions options) : Scheme(options), agree_(options) {
  std::vector<Candidate> other_segments;
  for (const SchemeEntry& e : scheme_registry()) {
    if (e.baseline || e.name == "auto") continue;
    std::unique_ptr<Scheme> s;
    try {
      s = e.make(options);
    } catch (const ConfigError&) {
      continue;  // options it does not fit (hierarchical on one node): no candidate
    }
    if (s->endpoints() != options.workers) continue;
    const bool segmented = s->segmented();
    candidates_.push_back({e.name, std::move(s), true});
    for (std::size_t segment : kSegmentSizes) {
      if (!segmented || segment == options.segment_bytes) continue;
      SchemeOptions at = options;
      at.segment_bytes = segment;
      other_segments.push_back({e.name + "@" + segment_label(segment), e.make(at), false});
    }
  }
  // The measured and tunable ones first, in registry order.
  for (Candidate& c : other_segments) candidates_.push_back(std::move(c));
  GRADEX_ENFORCE(!candidates_.empty(), "auto: no scheme runs on ", options.workers, " workers");
  if (options.tuned) check_table(*options.tuned);
}

void AutoScheme::check_table(const TunedTable& table) const {
  std::string counts;
  for (int w : table.worker_counts()) counts += (counts.empty() ? "" : ", ") + std::to_string(w);
  if (table.find(workers(), 0) == nullptr) {
    throw ConfigError("auto/table", detail::concat("has no sizes tuned on ", workers(),
                                                   " workers (it holds ", counts,
                                                   "): run gradex tune with these workers"));
  }
  for (const TunedChoice& c : table.choices) {
    if (c.workers == workers() && index_of(c.scheme) == candidates_.size()) {
      throw ConfigError("auto/table", "names '" + c.scheme + "' at " + std::to_string(c.bytes) +
                                          " bytes, which is not one of auto's candidates here");
    }
  }
}

std::size_t AutoScheme::index_of(const std::string& name) const {
  for (std::size_t i = 0; i < candidates_.size(); ++i) {
    if (candidates_[i].own_segment && candidates_[i].name == name) return i;
  }
  return candidates_.size();
}

std::vector<std::string> AutoScheme::candidates() const {
  std::vector<std::string> names;
  for (const Candidate& c : candidates_) {
    if (c.own_segment) names.push_back(c.name);
  }
  return names;
}

std::vector<std::string> AutoScheme::modelled_candidates() const {
  std::vector<std::string> names;
  for (const Candidate& c : candidates_) names.push_back(c.name);
  return names;
}

std::pair<std::string, SchemeOptions> AutoScheme::parse_label(const std::string& label,
                                                              SchemeOptions options) {
  const std::size_t at = label.find('@');
  if (at == std::string::npos) return {label, options};
  for (std::size_t segment : kSegmentSizes) {
    if (label.substr(at + 1) == segment_label(segment)) {
      options.segment_bytes = segment;
      return {label.substr(0, at), options};
    }
  }
  throw ConfigError("auto", "'" + label + "' is not a segment size auto tries");
}

std::size_t AutoScheme::known(std::size_t bytes) const {
  std::lock_guard lock(mutex_);
  const auto it = chosen_.find(bytes);
  return it == chosen_.end() ? candidates_.size() : it->second;
}

std::size_t AutoScheme::by_model(std::size_t bytes, const Topology& topology) const {
  // Ties (an unshaped network costs every scheme nothing) go to the first
  // in registry order.
  std::size_t best = 0;
  double best_time = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < candidates_.size(); ++i) {
    const double t = candidates_[i].scheme->model_time(bytes, topology);
    if (t < best_time) {
      best_time = t;
      best = i;
    }
  }
  return best;
}

std::size_t AutoScheme::by_measuring(Comm& comm, Tensor data, ReduceOp op) {
  // Every candidate reduces a fresh copy of the input, so `data` is
  // untouched until the chosen one runs on it.
  std::vector<std::byte> copy(data.bytes());
  const Tensor scratch{copy.data(), data.count, data.dtype};
  // Only the candidates at the options' segment size: trying every size
  // would multiply the trials for what the model already weighs.
  std::vector<double> best(candidates_.size(), std::numeric_limits<double>::infinity());
  const Traffic counted = comm.traffic();
  const int trials = data.bytes() < kOneTrialBytes ? kTrials : 1;
  for (int trial = 0; trial < trials; ++trial) {
    for (std::size_t i = 0; i < candidates_.size(); ++i) {
      if (!candidates_[i].own_segment) continue;
      if (data.bytes() > 0) copy_bytes(copy.data(), data.data, data.bytes());
      comm.barrier();
      const double t0 = comm.clock().now();
      candidates_[i].scheme->allreduce(comm, scratch, op);
      best[i] = std::min(best[i], comm.clock().now() - t0);
    }
  }
  // The slowest rank's time is the all-reduce's: every rank then holds the
  // same figures and picks the same candidate.
  agree_.allreduce(comm, Tensor{best.data(), best.size(), DType::f64}, ReduceOp::max);
  comm.restore_traffic(counted);
  return static_cast<std::size_t>(std::min_element(best.begin(), best.end()) - best.begin());
}

std::size_t AutoScheme::choose(Comm& comm, Tensor data, ReduceOp op) {
  const std::size_t bytes = data.bytes();
  std::size_t choice = known(bytes);
  if (choice < candidates_.size()) return choice;
  const Topology* network = comm.shaping();
  if (options().tuned) {
    choice = index_of(options().tuned->find(workers(), bytes)->scheme);
  } else if (network != nullptr && network->endpoints() == comm.size() &&
      (network->shaped() || comm.phantom_payloads())) {
    choice = by_model(bytes, *network);
  } else {
    GRADEX_ENFORCE(!data.phantom(), "auto: rank ", comm.rank(),
                   " cannot measure on phantom buffers without a modelled network");
    choice = by_measuring(comm, data, op);
  }
  std::lock_guard lock(mutex_);
  chosen_[bytes] = choice;
  return choice;
}

void AutoScheme::allreduce(Comm& comm, Tensor data, ReduceOp op) {
  GRADEX_ENFORCE_EQ(comm.size(), workers(), "auto runs on the workers only");
  candidates_[choose(comm, data, op)].scheme->allreduce(comm, data, op);
}

Traffic AutoScheme::expected_traffic(int endpoint, std::size_t count, DType dtype) const {
  const std::size_t i = known(count * dtype_size(dtype));
  GRADEX_ENFORCE(i < candidates_.size(), "auto has not run at ", count * dtype_size(dtype),
                 " bytes: its traffic is its choice's");
  return candidates_[i].scheme->expected_traffic(endpoint, count, dtype);
}

double AutoScheme::model_time(std::size_t bytes, const Topology& topology) const {
  std::size_t i = known(bytes);
  if (i == candidates_.size()) i = by_model(bytes, topology);
  return candidates_[i].scheme->model_time(bytes, topology);
}

std::string AutoScheme::chosen_for(std::size_t bytes) const {
  const std::size_t i = known(bytes);
  return i < candidates_.size() ? candidates_[i].name : std::string();
}

}  // namespace gradex
