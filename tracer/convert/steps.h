// Steps (training iterations) of a capture. A program marks step boundaries by calling
// faultline_mark_step() (the PyTorch hook does after every optimizer step) or cudaProfilerStart
// again inside the range; the start of the capture range is a boundary too. A boundary starts a
// step only when a kernel follows it before the next boundary, so a trailing copy (a loss read
// back after the last step) joins the last step instead of making one.
#pragma once

#include "tracer/convert/passes.h"
#include "tracer/convert/program_pass.h"

#include <cstdint>
#include <string>
#include <vector>

namespace faultline::capture {

// Per API event of `raw`: whether a step begins there.
std::vector<bool> step_starts(const RawStream& raw, const Pass& pass);

// The program's own time for each step, on the CPU's clock: from its boundary to the next step's,
// the last to the end of the range (cudaProfilerStop) or, without one, to the last API event.
// What the program would measure timing its own loop; empty when no step begins.
// `clock` moves the boundaries onto the program pass's clock, where there is one.
std::vector<int64_t> program_step_ns(const RawStream& raw, const Pass& pass,
                                     const CpuClock& clock = {});

struct StepMark {
  uint64_t first_record = 0; // index of the step's first timed record in the trace
  int64_t start_ns = 0;      // its time
};

// Rewrites the trace at `path` with the header key "steps" (traces/FORMAT.md) added.
// `program_ns` (one per step, or empty) goes beside them as "program_step_ns".
void write_steps(const std::string& path, const std::vector<StepMark>& steps,
                 const std::vector<int64_t>& program_ns = {});

} // namespace faultline::capture
