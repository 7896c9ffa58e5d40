// The end of every training command (gradex train, and gradex run / launch
// of a train workload): the summary table, the PS consistency table, the
// result files written atomically, the trace. Here rather than in train/
// because the atomic writer and the machine description live in runner/,
// which train/ does not link; the gradex binary links both.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/scenario.h"
#include "train/report.h"
#include "train/trace.h"

namespace gradex {

struct TrainOutcome {
  std::vector<TrainRun> runs;
  std::string staleness_table;  // PS consistency runs: rows after staleness_header()
  nlohmann::json staleness = nlohmann::json::array();
};

struct TrainOutputs {
  nlohmann::json config;                 // results.json "config"
  const Scenario* scenario = nullptr;    // embedded with the machine when given
  std::string folder;                    // results.csv + results.json; empty: none
  const Trace* trace = nullptr;          // written to trace_path when both are set
  std::string trace_path;
};

// Prints, writes, and returns the exit code: kExitWrong when some
// synchronised run's replicas disagree or its bytes on the wire differ from
// what its scheme declares, else kExitOk.
int finish_training(std::ostream& out, const TrainOutcome& outcome, const TrainOutputs& outputs);

}  // namespace gradex
