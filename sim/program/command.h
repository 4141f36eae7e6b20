// What `faultline run` does once its options are read (sim/cli/run.cc): it settles the budget,
// starts the program under the injection library in run mode with the policy host inside it
// (module.cc), passes the program's output and exit status through, and writes the result
// document with "backend": "program".
#pragma once

#include "sim/program/config.h"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace faultline::program {

struct RunRequest {
  std::string policy = "ondemand";
  nlohmann::json params = nlohmann::json::object();
  // The budget: bytes, or a fraction of the footprint (of `trace`, or footprint_bytes); a
  // fraction of 1 with no footprint is no budget.
  double budget_fraction = 1.0;
  uint64_t budget_bytes = 0;
  uint64_t footprint_bytes = 0;
  std::string trace;       // a trace of the same program: the footprint, and the oracle's future
  uint64_t iterations = 0; // the oracle's steps of `trace`
  bool torch = false;   // PyTorch: its allocator's memory managed, a step mark per optimizer step
  bool managed = false; // cudaMalloc becomes cudaMallocManaged
  std::string range = "all";          // or "profiler": see RunConfig::range
  std::string kernel_ends = "launch"; // or "gpu": see RunConfig::kernel_ends
  uint64_t margin = 2ull << 30;
  std::string inject; // the injection library (empty: beside the binary)
  std::string out;    // the result (empty: stdout)
  std::string keep;   // keep the run's files (config, raw stream, measurements) here
  // Each operation's GPU time from CUPTI's records (kernel_rows.h), in the result's "kernels";
  // the records cost the run a little, so its times are not the plain run's.
  bool per_kernel = false;
  // With per_kernel, the faults and migrations during each operation too, from CUPTI's
  // unified-memory counters. They slow every fault the driver services (by about 70% on an H100,
  // experiments/live/data/h100-da47aa33-cupti), so the rows' times are no longer the program's.
  bool um_counters = false;
  std::vector<std::string> command;
  std::string command_line; // `faultline run ...` as given, recorded in the result
};

// The budget in bytes the request gives (0: none). UsageError for a fraction without a
// footprint; Error for a trace that does not read.
uint64_t budget_bytes(const RunRequest& request);

// Runs the program and writes the result. Returns the exit status to leave with: the program's
// (128 + the signal's number when a signal ended it). UsageError for bad options (an unknown
// policy, params the policy does not take, a missing trace), before the program starts; Error
// when the program made no CUDA call the run could see, or the policy stopped it.
int run_program(const RunRequest& request);

} // namespace faultline::program
