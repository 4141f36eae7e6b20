// One simulation from files to a result document: what `faultline sim` runs.
#pragma once

#include "sim/config/run_config.h"
#include "sim/stats/run_totals.h"
#include "sim/stats/stats.h"
#include "sim/trace/step_repeater.h"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace faultline {

struct SimRequest {
  std::string config_path; // the run config file; or, when config_doc is set, its name in errors
  std::string trace_path;
  std::string timeline_path; // empty: none
  bool progress = false;     // a progress line on stderr
  bool check_invariants = false;
  nlohmann::json config_doc; // the run config itself (null: read config_path)
  uint64_t iterations = 0;   // overrides the config's "iterations" (0: the config's)
};

// Runs the simulation and returns the result document: measured values, the fully resolved config
// (capacity in bytes included), the trace's metadata and the project's git revision.
nlohmann::json run_sim(const SimRequest& request);

// The one writer of a result document's measured values, for both backends: "results" from
// RunTotals, a "steps" row from a StepResult; unset fields are left out.
nlohmann::json totals_json(const RunTotals& totals);
nlohmann::json step_json(const StepResult& row);
// The JSON paths the writer can write, "results." and "steps[]." prefixed (for the test that
// each is declared in result_fields.cc).
std::vector<std::string> written_paths();

// The simulator's Stats as a result document's values.
RunTotals totals_of(const Stats& stats, Time total_ns);
nlohmann::json stats_json(const Stats& stats, Time total_ns);
// The per-step rows of a run (the results' "steps").
nlohmann::json step_rows_json(const std::vector<StepRow>& rows);
// The steps a run ran and what repeating the trace's last step took (the results' "iterations").
nlohmann::json iterations_json(const trace::StepRepeater& steps);

// The git revision this binary was built from ("-dirty" when the tree had changes).
const char* git_revision();

} // namespace faultline
