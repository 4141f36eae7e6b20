// The live replay's plan: the trace (repetitions included, through the StepRepeater) flattened
// once, so the timed loop reads no file: the events in order, and every kernel's touches in the
// form the device takes, grouped per 2 MB chunk so the loop keeps its books per chunk.
#pragma once

#include "sim/core/types.h"
#include "sim/live/device.h"
#include "sim/trace/format.h"

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

namespace faultline::live {

struct Kernel {
  std::string name;
  uint64_t first = 0, count = 0;             // into Plan::touches
  uint64_t first_chunk = 0, chunk_count = 0; // into Plan::chunks
  Time duration = 0;
  std::vector<uint64_t> args;
};

struct Step {
  trace::RecordType type;
  trace::AllocRecord alloc;     // for kAlloc
  uint64_t id = 0;              // for kFree
  uint64_t kernel = 0;          // for kKernel
  trace::HostAccessRecord host; // for kHostAccess
  // Serial traces: the recorded host time between the previous kernel's end and this step.
  // Issue-time traces: its recorded CPU distance from the CPU's previous record (its issue, or a
  // sync's end); a kSync step is the CPU's wait for the GPU, which the replay has already done.
  Time gap = 0;
};

// A kernel's touches in one 2 MB stretch of an allocation: grouped when the plan is made, so
// that the timed loop keeps its books per chunk, not per page.
struct SlotChunk {
  uint32_t slot;
  uint32_t chunk; // 2 MB stretch of the allocation
  uint32_t pages; // 64 KB big pages touched, one bit each
};

// Where a training step (the trace header's "steps", repetitions included) begins: before
// Plan::steps[at]. Step -1 is the set-up.
struct StepStart {
  size_t at;
  int64_t step;
};

struct Plan {
  trace::Timeline timeline = trace::Timeline::kSerial;
  uint32_t version = trace::kVersion;
  std::vector<Step> steps;
  std::vector<StepStart> training_steps;
  nlohmann::json iterations; // what the StepRepeater ran (results' "iterations")
  std::vector<Kernel> kernels;
  std::vector<Touch> touches;
  std::vector<SlotChunk> chunks;
  std::unordered_map<uint64_t, uint32_t> slots; // managed allocation id -> slot
  uint64_t skipped_accesses = 0;                // outside managed allocations
};

// Reads a trace into a Plan; TraceError as the reader and StepRepeater raise them.
Plan read_plan(const std::string& path, uint64_t iterations);

} // namespace faultline::live
