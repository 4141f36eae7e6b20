// A trace's calls as the injection library would report the program that made it: its segments
// (allocator blocks are not seen in a program), frees, step marks and launches with the addresses
// of the allocations their arguments name, each launch's end reported at once or some launches
// later. For tests and the
// benchmark of the policy host's cost per launch, without a GPU.
#pragma once

#include "sim/program/program.h"

#include <cstdint>
#include <string>
#include <vector>

namespace faultline::program {

struct TraceCall {
  enum Kind { kAlloc, kFree, kLaunch, kStep } kind = kLaunch;
  uint64_t address = 0, bytes = 0;
  bool managed = true;
  std::string name;
  std::vector<uint64_t> words;
};

// The calls, every address moved by `shift` (the run's addresses need not be the trace's).
std::vector<TraceCall> trace_calls(const std::string& trace_path, uint64_t shift = 0);

// Feeds them to `run`, in order. The GPU's end of each kernel is reported once `behind` more
// kernels were launched (a CPU that runs ahead of the GPU by that many), and at the end.
void feed(const std::vector<TraceCall>& calls, ProgramRun& run, uint64_t behind = 0);

} // namespace faultline::program
