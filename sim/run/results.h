// One simulation from files to a result document: the `faultline sim` job.
#pragma once

#include "sim/config/run_config.h"
#include "sim/run/stats.h"

#include <nlohmann/json.hpp>
#include <string>

namespace faultline {

struct SimJob {
  std::string config_path; // the run config file; or, when config_doc is set, its name in errors
  std::string trace_path;
  std::string timeline_path; // empty: none
  bool progress = false;     // a progress line on stderr
  bool check_invariants = false;
  nlohmann::json config_doc; // the run config itself (null: read config_path)
};

// Runs the job and returns the result document: measured values, the fully resolved config
// (capacity in bytes included), the trace's metadata and the project's git revision.
nlohmann::json run_job(const SimJob& job);

nlohmann::json stats_json(const Stats& stats, Time total_ns);

// The git revision this binary was built from ("-dirty" when the tree had changes).
const char* git_revision();

} // namespace faultline
