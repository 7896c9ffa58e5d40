// How results are shown and kept: nccl-tests style tables on a stream, and
// CSV and JSON files (with the scenario and the machine embedded).
#pragma once

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/execute.h"

namespace gradex {

// One number as printf's `format` ("%.3f") writes it, for table cells.
std::string fmt(const char* format, double v);

void print_preamble(std::ostream& out, const Scenario& scenario);
void print_run_header(std::ostream& out, const PlannedRun& run);
void print_row(std::ostream& out, const ResultRow& row);
// What a table line says after its figures: the scheme auto ran, a
// traffic count that differs from the scheme's declared one.
std::string row_notes(const ResultRow& row);
// Cross-scheme comparison at the largest size, bus bandwidth averages and
// the correctness verdict.
void print_summary(std::ostream& out, const Scenario& scenario, const std::vector<ResultRow>& rows);

std::string results_csv(const std::vector<ResultRow>& rows);
nlohmann::json results_json(const Scenario& scenario, const std::vector<ResultRow>& rows,
                            const nlohmann::json& machine);
// Writes results.csv and results.json into `folder`, both or neither.
void write_results(const std::filesystem::path& folder, const Scenario& scenario,
                   const std::vector<ResultRow>& rows);

// True when every row has #wrong 0 and counted traffic equal to declared.
bool all_correct(const std::vector<ResultRow>& rows);

}  // namespace gradex
