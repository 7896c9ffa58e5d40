#include "train/trace.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "common/errors.h"

namespace gradex {

void Trace::add(TraceEvent e) {
  std::lock_guard lock(mutex_);
  events_.push_back(std::move(e));
}

std::vector<TraceEvent> Trace::events() const {
  std::lock_guard lock(mutex_);
  return events_;
}

std::string Trace::json_text() const {
  const std::vector<TraceEvent> evs = events();
  double origin = evs.empty() ? 0 : evs.front().start;
  for (const auto& e : evs) origin = std::min(origin, e.start);
  nlohmann::json out = nlohmann::json::array();
  int max_rank = -1;
  for (const auto& e : evs) max_rank = std::max(max_rank, e.rank);
  for (int r = 0; r <= max_rank; ++r) {
    out.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", r}, {"tid", 0},
                   {"args", {{"name", "rank " + std::to_string(r)}}}});
    out.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", r}, {"tid", 0},
                   {"args", {{"name", "compute"}}}});
    out.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", r}, {"tid", 1},
                   {"args", {{"name", "communication"}}}});
  }
  for (const auto& e : evs) {
    nlohmann::json event = {{"ph", "X"}, {"name", e.name}, {"pid", e.rank}, {"tid", e.track},
                            {"ts", (e.start - origin) * 1e6}, {"dur", e.duration * 1e6}};
    if (e.bucket >= 0) event["args"] = {{"bucket", e.bucket}, {"bytes", e.bytes}};
    out.push_back(std::move(event));
  }
  return nlohmann::json{{"traceEvents", out}, {"displayTimeUnit", "ms"}}.dump() + "\n";
}

void gather_trace(Comm& comm, Trace& trace) {
  // Above the barrier's rounds and the other gathers, below sub-group shifts.
  if (comm.rank() != 0) {
    nlohmann::json events = nlohmann::json::array();
    for (const TraceEvent& e : trace.events()) {
      events.push_back({e.name, e.rank, e.track, e.start, e.duration, e.bucket, e.bytes});
    }
    const std::string text = events.dump();
    const std::uint64_t bytes = text.size();
    comm.send(0, &bytes, sizeof bytes, kTraceGatherTag);
    comm.send(0, text.data(), text.size(), kTraceGatherTag);
    return;
  }
  for (int p = 1; p < comm.size(); ++p) {
    std::uint64_t bytes = 0;
    comm.recv(p, &bytes, sizeof bytes, kTraceGatherTag);
    std::string text(bytes, '\0');
    comm.recv(p, text.data(), text.size(), kTraceGatherTag);
    for (const auto& e : nlohmann::json::parse(text)) {
      trace.add({e[0].get<std::string>(), e[1].get<int>(), e[2].get<int>(), e[3].get<double>(),
                 e[4].get<double>(), e[5].get<int>(), e[6].get<std::size_t>()});
    }
  }
}

}  // namespace gradex
