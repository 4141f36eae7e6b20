// Step-end synchronisations for traces captured before the tracer recorded the runtime's
// synchronisation calls (cudaDeviceSynchronize reaches the driver by no callback of its own), of
// programs that wait for the GPU at the end of every step, as experiments/capture/workloads.py
// does. Without them a player lets the CPU run into the next step while the GPU still works.
#pragma once

#include <cstdint>
#include <string>

namespace faultline::capture {

// Contract: reads the issue-time trace `in` (with steps) and writes `out`: the same records, and
// before each step's first record from step 1 on, and after the last record, a device sync at
// the time of the step's last record, waiting until its kernels' recorded GPU end (issue + queued
// + duration) or not at all when they had ended. Refuses (TraceError) a serial trace, one without
// steps, or one that holds a device sync already. Returns the number of syncs added. The header
// gains "step_syncs_added": that number.
uint64_t add_step_syncs(const std::string& in, const std::string& out);

} // namespace faultline::capture
