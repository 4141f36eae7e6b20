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
  // When the policy hears a kernel's end (and its faults): "launch", at the program's next call
  // after its launch (the kernel is on its stream then, so what the policy does is ordered after
  // it), or "gpu", when the GPU has run it (the injection library's event after the launch,
  // polled at the program's calls). The books at a launch hold what the GPU will
  // hold once it reaches that kernel, and the policy's evictions wait for the kernels launched
  // before; so the position its actions take effect at is the launch, where "launch" puts its
  // view too. With "gpu" a CPU that runs ahead of the GPU leaves the policy planning from a
  // kernel hundreds of launches behind the books; the simulator's capacity mode "program"
  // models "launch".
  std::string kernel_ends = "launch";
  // Where the module writes its measurements at the program's exit.
  std::string out;
};

nlohmann::json to_json(const RunConfig& config);
// ConfigError (file `where`, JSON path) for a document that is not a RunConfig, or whose policy
// is unknown.
RunConfig run_config_of(const nlohmann::json& doc, const std::string& where);

} // namespace faultline::program
