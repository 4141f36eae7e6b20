// What a run measured. Filled by the simulator's components, never by policies.
#pragma once

#include "sim/core/types.h"

#include <string>
#include <vector>

namespace faultline {

struct KernelRow {
  uint64_t index = 0;
  std::string name;
  Time start = 0;
  Time end = 0;
  Time compute_ns = 0;
  Time stall_ns = 0;
  uint64_t accesses = 0;
  uint64_t faults = 0;
  // When the host asked for it, before the budget's evictions that make room for it (= start
  // where there are none): the live replay's rows start there, so a row compares with a live
  // one from here to its end.
  Time launched = 0;
};

// One training step's share of a run; step -1 is the set-up before step 0. A job's rows cover
// its run from time 0 to its end without gaps, so each counter sums to the run's total.
struct StepRow {
  int64_t step = 0;
  Time start = 0;
  Time end = 0;
  Time compute_ns = 0;
  Time stall_ns = 0;
  Time host_ns = 0;
  uint64_t kernels = 0;
  uint64_t accesses = 0;
  uint64_t faults = 0;
  uint64_t batches = 0;
  uint64_t pages_h2d = 0;
  uint64_t pages_d2h = 0;
  uint64_t evictions = 0;
  uint64_t prefetch_issued = 0;
  uint64_t prefetch_used = 0;
  Time migration_ns = 0;
  bool migration_stream = false; // as Stats'
  Time program_ns = 0;           // the program's own time for the step, from the trace (0: unknown)
};

struct Stats {
  uint64_t kernels = 0;
  uint64_t accesses = 0;
  uint64_t hits = 0;
  uint64_t faults = 0;           // fault-buffer entries raised by kernels
  uint64_t duplicate_faults = 0; // entries coalesced away inside a batch
  uint64_t batches = 0;
  Time batch_ns = 0;            // summed service time of all batches
  uint64_t blocks_serviced = 0; // VA blocks serviced, summed over batches
  Time compute_ns = 0;          // recorded kernel durations
  Time stall_ns = 0;            // kernel time beyond its recorded duration
  Time host_ns = 0;             // time the host spent in CPU faults
  Time host_in_trace_ns = 0;    // what its faults took in the captured program (issue timeline)
  uint64_t pages_h2d = 0;
  uint64_t pages_d2h = 0;
  // The GPU's link to the host (shared by the GPU's jobs): time each direction carried a copy,
  // and time both did at once.
  Time link_to_gpu_busy_ns = 0;
  Time link_to_host_busy_ns = 0;
  Time link_both_busy_ns = 0;
  // What kernels waited for beside their faults' own service: evictions (inside fault batches,
  // or the budget's before a kernel), copies already in flight when a fault came, and (budget
  // and program modes) the migrations issued on the stream before the kernel.
  Time eviction_wait_ns = 0;
  Time prefetch_wait_ns = 0;
  Time stream_wait_ns = 0;
  // Budget and program modes (`migration_stream`: the run has the stream): the time the
  // migration stream was busy with the budget's and the policy's migrations (what
  // `faultline run` measures as migration_gpu_ns).
  Time migration_ns = 0;
  bool migration_stream = false;
  uint64_t pages_populated = 0;         // first touches on the GPU: no copy needed
  uint64_t pages_populated_on_host = 0; // by eviction calls over chunks holding them
  uint64_t evictions = 0; // 2 MB chunks evicted on the fault path (or, in budget mode,
                          // before a kernel)
  uint64_t policy_evicted_pages = 0;
  uint64_t discarded_pages = 0;
  uint64_t discarded_refaults = 0;      // 64 KB big pages written by a fault after a discard
  uint64_t discarded_read_refaults = 0; // read by a fault after a discard: a first touch's cost
  uint64_t prefetch_issued = 0;         // pages brought ahead of a fault (density or policy)
  uint64_t prefetch_used = 0;           // ... and later touched by a kernel
  uint64_t prefetch_wasted = 0;         // ... and evicted, discarded or never touched
  uint64_t host_faults = 0;             // 64 KB big pages the host pulled back
  uint64_t thrashing_pins = 0;
  uint64_t remote_accesses = 0;
  uint64_t peak_chunks = 0;
  // Several GPUs: this job's data placed on and fetched from neighbours, and (for the
  // neighbour) the harvested chunks it took back.
  uint64_t peer_evictions = 0; // 2 MB chunks evicted to a neighbour GPU
  uint64_t pages_to_peer = 0;
  uint64_t pages_written_back = 0; // background copies neighbour -> host
  uint64_t pages_staged = 0;       // host -> neighbour, ahead of use here (multi-path prefetch)
  uint64_t pages_peer_in = 0;      // neighbour -> this GPU
  uint64_t reclaims_dropped = 0;   // another job's chunks dropped (host copy current)
  uint64_t reclaims_copied = 0;    // ... or evicted to the host first
  std::vector<KernelRow> kernel_rows;
  std::vector<StepRow> step_rows;
};

// A StepRow's counters as the totals so far (step and times left 0).
inline StepRow counters_of(const Stats& s) {
  StepRow r;
  r.compute_ns = s.compute_ns;
  r.stall_ns = s.stall_ns;
  r.host_ns = s.host_ns;
  r.kernels = s.kernels;
  r.accesses = s.accesses;
  r.faults = s.faults;
  r.batches = s.batches;
  r.pages_h2d = s.pages_h2d;
  r.pages_d2h = s.pages_d2h;
  r.evictions = s.evictions;
  r.prefetch_issued = s.prefetch_issued;
  r.prefetch_used = s.prefetch_used;
  r.migration_ns = s.migration_ns;
  r.migration_stream = s.migration_stream;
  return r;
}

// The counters of `to` less those of `from`; step and times are the caller's.
inline StepRow difference(const StepRow& to, const StepRow& from) {
  StepRow r;
  r.compute_ns = to.compute_ns - from.compute_ns;
  r.stall_ns = to.stall_ns - from.stall_ns;
  r.host_ns = to.host_ns - from.host_ns;
  r.kernels = to.kernels - from.kernels;
  r.accesses = to.accesses - from.accesses;
  r.faults = to.faults - from.faults;
  r.batches = to.batches - from.batches;
  r.pages_h2d = to.pages_h2d - from.pages_h2d;
  r.pages_d2h = to.pages_d2h - from.pages_d2h;
  r.evictions = to.evictions - from.evictions;
  r.prefetch_issued = to.prefetch_issued - from.prefetch_issued;
  r.prefetch_used = to.prefetch_used - from.prefetch_used;
  r.migration_ns = to.migration_ns - from.migration_ns;
  r.migration_stream = to.migration_stream;
  return r;
}

} // namespace faultline
