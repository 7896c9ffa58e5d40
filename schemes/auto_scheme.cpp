#include "schemes/auto_scheme.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "common/device_memory.h"
#include "common/errors.h"
#include "schemes/registry.h"

namespace gradex {

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
    candidates_.push_back({e.name, e.name, std::move(s)});
    for (std::size_t segment : kSegmentSizes) {
      if (!segmented || segment == options.segment_bytes) continue;
      const std::string label = scheme_label(e.name, segment);
      other_segments.push_back({label, e.name, make_scheme(label, options)});
    }
  }
  // Those at the options' own segment size first, in registry order.
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

std::size_t AutoScheme::index_of(const std::string& label) const {
  // By scheme and segment, however the size is written ("tree@65536" is
  // "tree@64KiB"; "tree@1MiB" is "tree" when the options' segment is 1 MiB).
  const SchemeLabel wanted = parse_scheme_label(label, "auto/table");
  for (std::size_t i = 0; i < candidates_.size(); ++i) {
    const Candidate& c = candidates_[i];
    if (c.name != wanted.name || (wanted.segment_bytes > 0 && !c.scheme->segmented())) continue;
    const std::size_t segment = c.scheme->options().segment_bytes;
    if (wanted.segment_bytes == 0 ? c.label == c.name : segment == wanted.segment_bytes) return i;
  }
  return candidates_.size();
}

std::vector<std::string> AutoScheme::candidates() const {
  std::vector<std::string> labels;
  for (const Candidate& c : candidates_) labels.push_back(c.label);
  return labels;
}

bool AutoScheme::same_cut_as_earlier(std::size_t i, std::size_t bytes) const {
  const Candidate& c = candidates_[i];
  if (!c.scheme->segmented() || c.scheme->options().segment_bytes < bytes) return false;
  for (std::size_t j = 0; j < i; ++j) {
    const Candidate& earlier = candidates_[j];
    if (earlier.name == c.name && earlier.scheme->options().segment_bytes >= bytes) return true;
  }
  return false;
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
  std::vector<double> best(candidates_.size(), std::numeric_limits<double>::infinity());
  const Traffic counted = comm.traffic();
  const int trials = data.bytes() < kOneTrialBytes ? kTrials : 1;
  for (int trial = 0; trial < trials; ++trial) {
    for (std::size_t i = 0; i < candidates_.size(); ++i) {
      if (same_cut_as_earlier(i, data.bytes())) continue;
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
    // The candidate the model puts first with the protocol this collective
    // runs (Scheme::run took the one auto's model, its fastest candidate's,
    // is fastest with): scheme and protocol picked together, as NCCL's
    // tuner picks algorithm and protocol.
    const char* protocol = comm.collective_protocol();
    choice = protocol == nullptr ? by_model(bytes, *network)
                                 : by_model(bytes, network->with_protocol(protocol));
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
  return i < candidates_.size() ? candidates_[i].label : std::string();
}

}  // namespace gradex
