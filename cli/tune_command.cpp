// gradex tune: measures every candidate of the auto scheme at each of the
// scenario's sizes and worker counts on its (real) transport, between
// threads or (--processes) as `gradex launch` runs it, in rounds
// whose order reverses each time, then measures again, in more rounds,
// the contenders (the candidates within kContenderMargin of a size's
// fastest), and writes OUT/tuned.json: per size the scheme with the lowest
// median time over its rounds, and every candidate's time. A scenario's
// "auto": {"table": "OUT/tuned.json"} then makes auto run those choices
// (NCCL's tuner plug-ins; Horovod's autotune).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>

#include "cli/command.h"
#include "cli/scenario_flags.h"
#include "common/errors.h"
#include "common/units.h"
#include "config/json_file.h"
#include "config/tuned_table_file.h"
#include "runner/atomic_file.h"
#include "runner/execute.h"
#include "runner/join_group.h"
#include "runner/machine.h"
#include "runner/measure.h"
#include "runner/output_paths.h"
#include "runner/report.h"
#include "schemes/auto_scheme.h"

namespace gradex::cli {

namespace {

// Rounds per tuning: enough for a median that one disturbed round does not
// move, few enough to tune a sweep in minutes.
constexpr int kDefaultRounds = 3;
// Then the contenders again: among a score of candidates a few per cent
// apart (segment sizes of one scheme often are), three rounds' noise picks
// the winner as much as the candidates do; more rounds of the few within
// this margin of a size's fastest settle it, for a fraction of the time
// the first rounds took.
constexpr int kDefaultConfirmRounds = 4;
constexpr double kContenderMargin = 0.10;

struct TuneFlags {
  ScenarioFlags scenario;
  int rounds = kDefaultRounds;
  int confirm_rounds = kDefaultConfirmRounds;
  bool processes = false;  // each round as `gradex launch`: one process per rank
};

// A folder of its own for the rounds run as processes, removed at the end.
class ScratchFolder {
 public:
  ScratchFolder()
      : path_(std::filesystem::temp_directory_path() /
              ("gradex_tune_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// One round on `workers` as processes: the scenario with these workers,
// schemes and output written to a file, launched as `gradex launch` would
// run it, its rows read back from results.json.
std::vector<ResultRow> launched_round(const Scenario& sc, int workers,
                                      const std::vector<std::string>& order, int round,
                                      const ScratchFolder& scratch) {
  nlohmann::json doc = sc.source;
  doc["workers"] = workers;
  doc["schemes"] = order;
  const std::filesystem::path out = scratch.path() / ("round_" + std::to_string(round));
  doc["output"] = out.string();
  const std::filesystem::path file = scratch.path() / "scenario.json";
  write_files_atomically({{file, doc.dump(2)}});
  // Rank 0's tables would interleave with tune's own: its stdout goes to
  // a file beside the results (errors still reach stderr).
  std::cout.flush();
  const int saved = ::dup(STDOUT_FILENO);
  const int log = ::open((scratch.path() / "launch.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (saved < 0 || log < 0) throw Error("tune: cannot set aside stdout for the launched ranks");
  ::dup2(log, STDOUT_FILENO);
  ::close(log);
  int code = 0;
  try {
    code = launch_group({"launch", file.string(), "-n", std::to_string(workers), "-q"},
                              workers, sc.timeout);
  } catch (...) {
    ::dup2(saved, STDOUT_FILENO);
    ::close(saved);
    throw;
  }
  ::dup2(saved, STDOUT_FILENO);
  ::close(saved);
  if (code != 0) {
    throw Error(detail::concat("tune: round ", round, " on ", workers,
                               " processes failed (gradex launch exited with ", code, ")"));
  }
  const nlohmann::json results = read_json_file(out / "results.json");
  std::vector<ResultRow> rows;
  for (const auto& r : results.at("results")) {
    ResultRow row;
    row.scheme = r.at("scheme").get<std::string>();
    row.bytes = r.at("bytes").get<std::size_t>();
    row.time = r.at("time_s").get<double>();
    row.wrong = r.at("wrong").is_null() ? 0 : r.at("wrong").get<std::size_t>();
    rows.push_back(std::move(row));
  }
  return rows;
}

// auto's candidates on `workers`, as the plan would make it.
std::vector<std::string> candidates_at(const TuneFlags& f, int workers) {
  ScenarioFlags one = f.scenario;
  one.workers = {workers};
  one.schemes = {"auto"};
  one.no_output = true;
  const RunPlan plan = load_plan(one);
  return dynamic_cast<const AutoScheme&>(*plan.runs.front().instance).candidates();
}

// Every candidate's time at each size on `workers`, one list per size and
// scheme with a median per round.
using Times = std::map<std::size_t, std::map<std::string, std::vector<double>>>;

double median_of(const std::vector<double>& xs) {
  Measurement m;
  m.seconds = xs;
  return m.median();
}

// Rounds [first, last] of `order` on `workers`, their times added to `times`.
void measure_rounds(const TuneFlags& f, int workers, std::vector<std::string> order, int first,
                    int last, const ScratchFolder& scratch, Times& times, std::ostream& out) {
  for (int round = first; round <= last; ++round) {
    ScenarioFlags one = f.scenario;
    one.workers = {workers};
    one.schemes = order;
    one.no_output = true;
    out << "# " << workers << " workers, round " << round << " of " << last << ":";
    for (const std::string& name : order) out << " " << name;
    out << (f.processes ? " (as processes)" : "") << std::endl;
    const RunPlan plan = load_plan(one);
    const std::vector<ResultRow> rows =
        f.processes ? launched_round(plan.scenario, workers, order, round, scratch)
                    : execute_plan(plan, [](const auto&, const auto&) {});
    for (const ResultRow& row : rows) {
      if (row.wrong != 0) {
        throw InvariantError(row.scheme + " reduced " + std::to_string(row.wrong) +
                             " values wrongly at " + std::to_string(row.bytes) + " bytes");
      }
      times[row.bytes][row.scheme].push_back(row.time);
    }
    std::reverse(order.begin(), order.end());  // who goes first changes the times
  }
}

// Each size's median times on `workers`.
std::vector<TunedSize> medians(const Times& times, int workers) {
  std::vector<TunedSize> sizes;
  for (const auto& [bytes, per_scheme] : times) {
    TunedSize s{workers, bytes, {}};
    for (const auto& [name, rounds] : per_scheme) s.seconds[name] = median_of(rounds);
    sizes.push_back(std::move(s));
  }
  return sizes;
}

// Every candidate in f.rounds rounds, then the contenders in
// f.confirm_rounds more (none when one candidate leads every size by more
// than the margin).
std::vector<TunedSize> measure_candidates(const TuneFlags& f, int workers, std::ostream& out) {
  const std::vector<std::string> order = candidates_at(f, workers);
  Times times;
  const ScratchFolder scratch;
  measure_rounds(f, workers, order, 1, f.rounds, scratch, times, out);
  std::vector<TunedSize> first = medians(times, workers);
  if (f.confirm_rounds == 0) return first;
  const std::vector<std::string> close = contenders(first, order, kContenderMargin);
  if (close.size() < 2) return first;
  out << "# " << close.size() << " of " << order.size() << " candidates within "
      << kContenderMargin * 100 << "% of a size's fastest, measured again" << std::endl;
  measure_rounds(f, workers, close, f.rounds + 1, f.rounds + f.confirm_rounds, scratch, times,
                 out);
  return medians(times, workers);
}

void print_choice(std::ostream& out, const TunedSize& size) {
  const std::string best = fastest(size);
  double second = 0;
  std::string runner_up = "-";
  for (const auto& [name, t] : size.seconds) {
    if (name != best && (second == 0 || t < second)) {
      second = t;
      runner_up = name;
    }
  }
  const double t = size.seconds.at(best);
  out << std::setw(8) << size.workers << std::setw(12) << size.bytes << std::setw(20) << best
      << std::setw(12) << fmt("%.1f", t * 1e6) << std::setw(20) << runner_up << std::setw(9)
      << (second > 0 ? fmt("%.2f", second / t) : std::string("-")) << "\n";
}

int tune(const TuneFlags& f, std::ostream& out) {
  if (f.rounds < 1) throw ConfigError("--rounds", "must be at least 1");
  if (f.confirm_rounds < 0) throw ConfigError("--confirm-rounds", "must not be negative");
  if (!f.scenario.schemes.empty()) {
    throw ConfigError("--schemes", "tune measures auto's candidates: it takes no schemes");
  }
  ScenarioFlags probe = f.scenario;
  probe.schemes = {"auto"};
  const RunPlan plan = load_plan(probe);
  const Scenario& sc = plan.scenario;
  if (sc.training) throw ConfigError(scenario_label(f.scenario), "tune measures the all-reduce benchmark, not training");
  if (sc.transport == "sim") {
    throw ConfigError("--transport", "tune measures a real transport; on the simulator auto "
                                     "already picks by the cost model");
  }
  if (!sc.auto_table_path.empty()) {
    throw ConfigError(scenario_label(f.scenario) + "#/auto/table",
                      "tune writes a table; it does not read one");
  }
  if (f.processes && sc.transport == "inproc") {
    throw ConfigError("--processes", "applies to tcp and zmq (in-process ranks are threads)");
  }
  if (sc.output.empty()) throw ConfigError("-o", "missing: the folder for tuned.json");
  check_output_folder(sc.output, f.scenario.output.empty() ? scenario_label(f.scenario) + "#/output" : "-o");
  out << provenance_line() << "\n# gradex tune: " << scenario_label(f.scenario) << ", transport "
      << sc.transport << (f.processes ? " between processes" : "") << ", " << f.rounds
      << " rounds, then " << f.confirm_rounds
      << " of the contenders, order reversed each round\n";
  std::vector<TunedSize> sizes;
  for (int workers : sc.workers) {
    for (TunedSize& s : measure_candidates(f, workers, out)) sizes.push_back(std::move(s));
  }
  out << "#\n#" << std::setw(7) << "workers" << std::setw(12) << "size (B)" << std::setw(20)
      << "fastest" << std::setw(12) << "time (us)" << std::setw(20) << "next" << std::setw(9)
      << "x slower" << "\n";
  for (const TunedSize& s : sizes) print_choice(out, s);
  const nlohmann::json about = {{"machine", describe_machine()},
                                {"rounds", f.rounds},
                                {"confirm_rounds", f.confirm_rounds},
                                {"processes", f.processes},
                                {"scenario", sc.source}};
  const std::filesystem::path file = std::filesystem::path(sc.output) / "tuned.json";
  write_files_atomically({{file, tuned_table_json(sc.transport, sizes, about).dump(2) + "\n"}});
  out << "# table written to " << file.string() << " (\"auto\": {\"table\": \"" << file.string()
      << "\"})\n";
  return kExitOk;
}

}  // namespace

Command add_tune_command(CLI::App& parent) {
  auto flags = std::make_shared<TuneFlags>();
  CLI::App* cmd = parent.add_subcommand(
      "tune", "measure auto's candidates per size on the real transport and write the table "
              "auto can run from");
  add_scenario_flags(*cmd, flags->scenario, true);
  cmd->add_option("-o,--output", flags->scenario.output,
                  "folder for tuned.json (overrides the scenario's \"output\")");
  cmd->add_option("--rounds", flags->rounds,
                  "rounds, each candidate's order reversed (default " +
                      std::to_string(kDefaultRounds) + ")");
  cmd->add_option("--confirm-rounds", flags->confirm_rounds,
                  "more rounds of the candidates within " +
                      std::to_string(std::lround(kContenderMargin * 100)) +
                      "% of a size's fastest (default " + std::to_string(kDefaultConfirmRounds) +
                      "; 0: none)");
  cmd->add_flag("--processes", flags->processes,
                "run each round as gradex launch does, one process per rank (tcp, zmq)");
  add_unshaped_flag(*cmd, flags->scenario);
  return {cmd, [flags] { return tune(*flags, std::cout); }};
}

}  // namespace gradex::cli
