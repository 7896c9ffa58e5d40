#include "cli/train_output.h"

#include <filesystem>

#include "cli/command.h"
#include "runner/atomic_file.h"
#include "runner/machine.h"

namespace gradex::cli {

int finish_training(std::ostream& out, const TrainOutcome& o, const TrainOutputs& w) {
  print_train_summary(out, o.runs);
  if (!o.staleness_table.empty()) out << staleness_header() << o.staleness_table;
  if (!w.folder.empty()) {
    nlohmann::json doc;
    if (w.scenario != nullptr) {
      doc["scenario"] = w.scenario->source;
      doc["machine"] = describe_machine();
    }
    doc.update(train_json(o.runs, w.config));
    if (!o.staleness.empty()) doc["staleness"] = o.staleness;
    const std::filesystem::path folder = w.folder;
    std::filesystem::create_directories(folder);
    write_files_atomically({{folder / "results.csv", train_csv(o.runs)},
                            {folder / "results.json", doc.dump(2) + "\n"}});
    out << "# results written to " << w.folder << "/results.{csv,json}\n";
  }
  if (w.trace != nullptr && !w.trace_path.empty()) {
    w.trace->write(w.trace_path);
    out << "# trace written to " << w.trace_path << "\n";
  }
  for (const TrainRun& r : o.runs) {
    if (!r.result.replicas_agree) return kExitWrong;
  }
  return kExitOk;
}

}  // namespace gradex::cli
