#include "runner/train_output.h"

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "runner/exit_codes.h"
#include "runner/atomic_file.h"
#include "runner/machine.h"

namespace gradex {

int finish_training(std::ostream& out, const TrainOutcome& o, const TrainOutputs& w) {
  print_train_summary(out, o.runs);
  if (!o.staleness_table.empty()) out << staleness_header() << o.staleness_table;
  // The result files and the trace are written together, all or none.
  std::vector<std::pair<std::filesystem::path, std::string>> files;
  if (!w.folder.empty()) {
    nlohmann::json doc;
    if (w.scenario != nullptr) {
      doc["scenario"] = w.scenario->source;
      doc["machine"] = describe_machine();
    }
    doc.update(train_json(o.runs, w.config));
    if (!o.staleness.empty()) doc["staleness"] = o.staleness;
    const std::filesystem::path folder = w.folder;
    files.push_back({folder / "results.csv", train_csv(o.runs)});
    files.push_back({folder / "results.json", doc.dump(2) + "\n"});
  }
  const bool tracing = w.trace != nullptr && !w.trace_path.empty();
  if (tracing) files.push_back({w.trace_path, w.trace->json_text()});
  if (!files.empty()) write_files_atomically(files);
  if (!w.folder.empty()) out << "# results written to " << w.folder << "/results.{csv,json}\n";
  if (tracing) out << "# trace written to " << w.trace_path << "\n";
  for (const TrainRun& r : o.runs) {
    // A no-sync baseline's replicas diverge by design; traffic other than
    // the scheme declares is off-model, as in a benchmark.
    if (r.result.synchronised && r.result.payloads && !r.result.replicas_agree) return kExitWrong;
    if (!wire_matches_declared(r.result)) return kExitWrong;
  }
  return kExitOk;
}

}  // namespace gradex
