// The live replay: `faultline replay` re-executes a trace on a real GPU under a policy and a
// residency budget, through the LiveDevice seam (sim/live/device.h). Kernels run one at a time
// in trace order, like the simulator's; every step waits for the host time recorded before it;
// host accesses pull their pages back from the GPU; the policy sees the same events as in the
// simulator, and its actions become prefetches, evictions, discards and advice. A kernel's faults
// reach the policy at its end: by default the pages it found off the GPU, from the replay's own
// books (exact, since under the budget only the replay and the kernels move memory); with --faults
// cupti, CUPTI's fault records, which lose most faults on the driver measured
// (experiments/live/reports/h200/README.md).
#pragma once

#include "sim/live/device.h"

#include <nlohmann/json.hpp>
#include <string>

namespace faultline::live {

struct ReplayRequest {
  std::string trace_path;
  std::string policy = "ondemand";
  nlohmann::json policy_params = nlohmann::json::object();
  // Residency budget: a fraction of the trace's footprint, or bytes when budget_bytes > 0.
  double budget_fraction = 1.0;
  uint64_t budget_bytes = 0;
  // Managed and device memory must stay this far below the GPU's free memory.
  uint64_t margin = 2ull << 30;
  // Where a policy that watches faults learns them. kCupti drains CUPTI's records (untimed, GPU
  // idle) every drain_every kernels; the drain slows the next kernel, which the simulator does
  // not model.
  enum class FaultSource { kBooks, kCupti };
  FaultSource fault_source = FaultSource::kBooks;
  uint32_t drain_every = 1;
  bool per_kernel = false; // add a row per kernel to the result
  // CUPTI's unified-memory counters on (`--counters`): the result counts the bytes each way and
  // the GPU's fault records, and the fault path runs slower than the program's
  // (sim/live/device.h's OpenOptions). Off, those fields are left out of the result. The
  // options below that read CUPTI (fault_source kCupti, eviction_bytes, drain_counters) need it.
  bool counters = false;
  // Diagnosis (issue 21, bytes back): each budget eviction alone, the GPU idle and CUPTI's
  // counters drained before and after it off the clock, and after every kernel as
  // drain_counters; a row per eviction with the pages the books hold in the chunk and the bytes
  // the GPU copied back. Slows the replay: not for timing.
  bool eviction_bytes = false;
  // Diagnosis: a CSV row per migration call (kernel, kind, trace address, bytes, start and CPU
  // ns on the replay's clock) into this file; none when empty. Timing as usual.
  std::string call_log;
  // CUPTI's unified-memory records drained (GPU idle, off the clock) after every kernel or part
  // of one: without drains CUPTI loses byte records under migration-heavy replays
  // (experiments/live/data/bytes-back/). The drains are off the clock, but drained runs took
  // 16-46% longer than undrained ones on another instance: a run for bytes, not for timing.
  bool drain_counters = false;
  // Spare memory of the next GPU that the policy may use as a victim cache (0: none), and the
  // reserve it keeps for its own job, as the simulator's driver.peer_reserve_bytes.
  uint64_t peer_budget_bytes = 0;
  uint64_t peer_reserve_bytes = 100ull << 20;
  // Training steps to run, as the simulator's "iterations" (trace::StepRepeater); 0: the
  // trace's own.
  uint64_t iterations = 0;
};

// Contract: runs the trace once on `device`, for request.iterations steps, and returns a result
// document with the same fields as `faultline sim` where they can be measured (a row per
// training step among them), the resolved request and the git revision. With more than one row,
// the replay waits (timed) for the migrations in flight where a step begins and drains the
// counters (untimed), so that each step's bytes are its own.
// Refuses (Error) before allocating anything if the trace's managed plus device memory would
// come closer than the margin to the GPU's free memory.
nlohmann::json run_replay(const ReplayRequest& request, LiveDevice& device);

} // namespace faultline::live
