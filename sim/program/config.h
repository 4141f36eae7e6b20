// A program run's config: what `faultline run` (sim/cli/run.cc) settles from its options and
// hands to the policy host inside the program (module.cc) as a JSON file. Read strictly: a
// missing, unknown or mistyped key is a ConfigError naming its JSON path.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace faultline::program {

struct RunConfig {
  std::string policy = "ondemand";
  nlohmann::json params = nlohmann::json::object();
  // The residency budget for managed memory; 0: none (the driver alone keeps the GPU's memory).
  uint64_t budget_bytes = 0;
  // The trace of the same program, for a policy that reads one (the oracle); may be empty.
  std::string trace;
  // Training steps the oracle's trace is repeated for (policies::StartEvent::iterations).
  uint64_t iterations = 0;
  // Steps: "all" (the start and every step mark begin one) or "profiler" (what runs before the
  // first cudaProfilerStart is the set-up, step -1; then each cudaProfilerStart and step mark
  // inside the range begins one), as `faultline capture --range` counts them.
  std::string range = "all";
  // Where the module writes its measurements at the program's exit.
  std::string out;
};

nlohmann::json to_json(const RunConfig& config);
// ConfigError (file `where`, JSON path) for a document that is not a RunConfig, or whose policy
// is unknown.
RunConfig run_config_of(const nlohmann::json& doc, const std::string& where);

} // namespace faultline::program
