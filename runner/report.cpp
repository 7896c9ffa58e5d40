#include "runner/report.h"

#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include "common/units.h"
#include "runner/atomic_file.h"
#include "runner/machine.h"

namespace gradex {

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

namespace {

std::string describe_link(const LinkSpec& l) {
  if (l.unlimited()) return "unlimited";
  std::string text = format_rate(l.bytes_per_second) + ", " + fmt("%g", l.latency_seconds * 1e6) + " us";
  for (std::size_t i = 0; i < l.protocols.size(); ++i) {
    text += i == 0 ? " + protocols " : "/";
    text += l.protocols[i].name;
  }
  return text;
}

// nccl-tests' factors (common/collective.h), as the preamble states them.
const char* bus_factor_formula(Collective c) {
  switch (c) {
    case Collective::all_reduce: return "2(n-1)/n";
    case Collective::reduce_scatter:
    case Collective::all_gather: return "(n-1)/n (bytes: the whole buffer, n blocks)";
    case Collective::broadcast: return "1";
  }
  return "?";
}

}  // namespace

void print_preamble(std::ostream& out, const Scenario& s) {
  // The simulator runs each size once, in virtual time: no iterations.
  const bool simulated = s.transport == "sim";
  out << "# gradex " << (simulated ? "simulate" : "run") << ": " << s.name << "\n"
      << provenance_line() << "\n";
  if (!s.description.empty()) out << "# " << s.description << "\n";
  out << "# " << (s.collective_swept ? "collective swept" : collective_name(s.collective))
      << ", transport " << s.transport << ", dtype " << dtype_name(s.dtype);
  if (s.collective_swept || collective_reduces(s.collective)) {
    out << ", op " << reduce_op_name(s.op);
  }
  if (!simulated) out << ", warm-up " << s.warmup_iters << ", timed iterations " << s.iters;
  out << ", segment " << format_bytes(static_cast<double>(s.segment_bytes));
  if (s.slice_bytes > 0) out << ", ring slice " << format_bytes(static_cast<double>(s.slice_bytes));
  out << "\n";
  if (s.network.shaped) {
    out << "# network (shaped): ";
    if (!s.network.node.empty()) out << s.network.node << " nodes, ";
    out << "ranks per node " << s.ranks_per_node << "; intra-node "
        << describe_link(s.network.intra_node) << "; inter-node "
        << describe_link(s.network.inter_node)
        << (s.network.nic_per_node ? "; one NIC per node" : "; one NIC per endpoint") << "\n";
  } else {
    out << "# network: unshaped ("
        << (s.transport == "inproc" ? "in-process, as fast as memory allows"
                                    : "as fast as the real network and the hosts allow")
        << ")\n";
  }
  out << "# ps.servers: " << s.ps_servers
      << "; hierarchical inter-node algorithm: " << s.inter_algorithm << "\n";
  out << (simulated ? "# time: the slowest worker's virtual time"
                    : "# time: median of the timed iterations (slowest worker each)")
      << "; busbw = algbw x "
      << (s.collective_swept ? "the point's collective's factor: all_reduce 2(n-1)/n, "
                               "reduce_scatter and all_gather (n-1)/n, broadcast 1"
                             : bus_factor_formula(s.collective))
      << ";\n"
      << "# util: link bytes sent / (summed egress capacity x time)" << std::endl;
}

void print_run_header(std::ostream& out, const PlannedRun& run) {
  out << "#\n# " << run.scheme << ": " << run.summary << "\n"
      << "# workers " << run.workers << ", endpoints " << run.instance->endpoints() << "\n#\n"
      << "#" << std::setw(11) << "size" << std::setw(12) << "count" << std::setw(10) << "type"
      << std::setw(7) << "redop" << std::setw(12) << "time" << std::setw(11) << "min"
      << std::setw(11) << "max" << std::setw(9) << "algbw" << std::setw(9) << "busbw"
      << std::setw(8) << "#wrong" << std::setw(8) << "util" << "\n"
      << "#" << std::setw(11) << "(B)" << std::setw(12) << "(elements)" << std::setw(10) << ""
      << std::setw(7) << "" << std::setw(12) << "(us)" << std::setw(11) << "(us)"
      << std::setw(11) << "(us)" << std::setw(9) << "(GB/s)" << std::setw(9) << "(GB/s)"
      << std::setw(8) << "" << std::setw(8) << "(%)" << "\n";
}

std::string row_notes(const ResultRow& r) {
  return (r.chose.empty() ? "" : "  (ran " + r.chose + ")") +
         (r.protocol.empty() ? "" : "  (" + r.protocol + ")") +
         (r.subset > 0 ? "  (symmetric subset: " + std::to_string(r.subset) + " of " +
                             std::to_string(r.endpoints) + " ranks simulated)"
                       : "") +
         std::string(r.traffic_matches ? "" : "  traffic differs from the scheme's model");
}

void print_row(std::ostream& out, const ResultRow& r) {
  out << std::setw(12) << r.bytes << std::setw(12) << r.count << std::setw(10)
      << dtype_table_name(r.dtype) << std::setw(7)
      << (collective_reduces(r.collective) ? reduce_op_name(r.op) : "-") << std::setw(12)
      << fmt("%.1f", r.time * 1e6) << std::setw(11) << fmt("%.1f", r.time_min * 1e6)
      << std::setw(11) << fmt("%.1f", r.time_max * 1e6) << std::setw(9)
      << fmt("%.3f", r.algbw / 1e9) << std::setw(9) << fmt("%.3f", r.busbw / 1e9) << std::setw(8)
      << (r.checked ? std::to_string(r.wrong) : "-") << std::setw(8) << (r.utilisation < 0 ? "-" : fmt("%.1f", r.utilisation * 100))
      << row_notes(r) << "\n";
  out.flush();
}

bool all_correct(const std::vector<ResultRow>& rows) {
  return std::all_of(rows.begin(), rows.end(),
                     [](const ResultRow& r) { return r.wrong == 0 && r.traffic_matches; });
}

void print_summary(std::ostream& out, const Scenario& s, const std::vector<ResultRow>& rows) {
  if (rows.empty()) return;
  const std::size_t largest = std::max_element(rows.begin(), rows.end(), [](auto& a, auto& b) {
                                return a.bytes < b.bytes;
                              })->bytes;
  std::vector<std::string> schemes;
  std::set<int> worker_counts;
  std::map<std::pair<std::string, int>, const ResultRow*> at_largest;
  std::map<std::string, std::pair<double, int>> busbw_sum;
  for (const ResultRow& r : rows) {
    if (std::find(schemes.begin(), schemes.end(), r.scheme) == schemes.end()) schemes.push_back(r.scheme);
    worker_counts.insert(r.workers);
    if (r.bytes == largest) at_largest[{r.scheme, r.workers}] = &r;
    busbw_sum[r.scheme].first += r.busbw;
    busbw_sum[r.scheme].second += 1;
  }
  out << "#\n# Summary at " << format_bytes(static_cast<double>(largest))
      << ": median time in ms (busbw GB/s" << (s.network.shaped ? ", util %" : "") << ")\n";
  out << "#" << std::setw(19) << "scheme";
  for (int w : worker_counts) out << std::setw(26) << (std::to_string(w) + " workers");
  out << "\n";
  for (const std::string& name : schemes) {
    out << "#" << std::setw(19) << name;
    for (int w : worker_counts) {
      auto it = at_largest.find({name, w});
      if (it == at_largest.end()) {
        out << std::setw(26) << "-";
        continue;
      }
      const ResultRow& r = *it->second;
      std::string cell = fmt("%.2f", r.time * 1e3) + " (" + fmt("%.2f", r.busbw / 1e9);
      if (r.utilisation >= 0) cell += ", " + fmt("%.0f", r.utilisation * 100);
      cell += ")";
      out << std::setw(26) << cell;
    }
    out << "\n";
  }
  out << "#\n# Avg bus bandwidth (GB/s):";
  for (const std::string& name : schemes) {
    const auto& [sum, n] = busbw_sum[name];
    out << " " << name << " " << fmt("%.3f", sum / n / 1e9) << ";";
  }
  std::size_t wrong = 0;
  std::size_t mismatched = 0;
  bool checked = false;
  for (const ResultRow& r : rows) {
    wrong += r.wrong;
    checked = checked || r.checked;
    mismatched += r.traffic_matches ? 0 : 1;
  }
  out << "\n# Out of bounds values : "
      << (!checked ? "not checked (phantom buffers)" : wrong == 0 ? "0 OK"
                                                                  : std::to_string(wrong) + " FAILED")
      << "\n"
      << "# Traffic as declared   : "
      << (mismatched == 0 ? "OK" : std::to_string(mismatched) + " rows differ FAILED") << "\n#\n";
}

// RFC 4180: a field holding a comma or a quote is quoted, quotes doubled
// (a sweep label holds both: ps.servers=2 segment_bytes="1MiB").
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string results_csv(const std::vector<ResultRow>& rows) {
  std::ostringstream out;
  out << "scheme,workers,endpoints,bytes,count,dtype,op,time_s,time_min_s,time_max_s,algbw_Bps,"
         "busbw_Bps,wrong,utilisation,link_bytes,expected_link_bytes,traffic_matches,model_time_s,"
         "source,chose,sweep,collective\n";
  out << std::setprecision(9);
  for (const ResultRow& r : rows) {
    out << r.scheme << ',' << r.workers << ',' << r.endpoints << ',' << r.bytes << ',' << r.count
        << ',' << dtype_name(r.dtype) << ','
        << (collective_reduces(r.collective) ? reduce_op_name(r.op) : "") << ',' << r.time << ','
        << r.time_min << ',' << r.time_max << ',' << r.algbw << ',' << r.busbw << ',';
    if (r.checked) out << r.wrong;
    out << ',';
    if (r.utilisation >= 0) out << r.utilisation;
    out << ',' << r.link_bytes << ',' << r.expected_link_bytes << ','
        << (r.traffic_matches ? "true" : "false") << ',' << r.model_time << ',' << r.source << ','
        << r.chose << ',' << csv_field(r.sweep) << ',' << collective_name(r.collective) << '\n';
  }
  return out.str();
}

nlohmann::json results_json(const Scenario& s, const std::vector<ResultRow>& rows,
                            const nlohmann::json& machine) {
  nlohmann::json doc;
  doc["scenario"] = s.source;
  doc["machine"] = machine;
  auto& out = doc["results"] = nlohmann::json::array();
  for (const ResultRow& r : rows) {
    nlohmann::json row = {
        {"collective", collective_name(r.collective)},
        {"scheme", r.scheme},     {"workers", r.workers},
        {"endpoints", r.endpoints}, {"bytes", r.bytes},
        {"count", r.count},       {"dtype", dtype_name(r.dtype)},
        {"time_s", r.time},
        {"time_min_s", r.time_min}, {"time_max_s", r.time_max},
        {"algbw_Bps", r.algbw},   {"busbw_Bps", r.busbw},
        {"link_bytes", r.link_bytes}, {"source", r.source},
        {"expected_link_bytes", r.expected_link_bytes},
        {"traffic_matches", r.traffic_matches}, {"model_time_s", r.model_time}};
    // An op only where the collective reduces (nccl-tests prints none).
    row["op"] = collective_reduces(r.collective) ? nlohmann::json(reduce_op_name(r.op))
                                                 : nlohmann::json();
    row["utilisation"] = r.utilisation >= 0 ? nlohmann::json(r.utilisation) : nlohmann::json();
    row["wrong"] = r.checked ? nlohmann::json(r.wrong) : nlohmann::json();
    row["chose"] = r.chose.empty() ? nlohmann::json() : nlohmann::json(r.chose);
    row["protocol"] = r.protocol.empty() ? nlohmann::json() : nlohmann::json(r.protocol);
    row["sweep"] = r.sweep.empty() ? nlohmann::json() : nlohmann::json(r.sweep);
    if (r.engine) {
      row["engine"] = {{"events", r.engine->events},
                       {"messages", r.engine->messages},
                       {"context_switches", r.engine->context_switches},
                       {"peak_operations", r.engine->peak_operations}};
    }
    auto& per = row["traffic"] = nlohmann::json::array();
    for (const Traffic& t : r.traffic) {
      per.push_back({{"bytes_sent", t.bytes_sent},
                     {"bytes_received", t.bytes_received},
                     {"messages_sent", t.messages_sent},
                     {"messages_received", t.messages_received}});
    }
    out.push_back(std::move(row));
  }
  return doc;
}

void write_results(const std::filesystem::path& folder, const Scenario& s,
                   const std::vector<ResultRow>& rows) {
  write_files_atomically({{folder / "results.csv", results_csv(rows)},
                          {folder / "results.json", results_json(s, rows, describe_machine()).dump(2) + "\n"}});
}

}  // namespace gradex
