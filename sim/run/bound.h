// A lower bound on the time of any policy for a trace at a capacity, to set beside the oracle
// (which is a strong policy, not a proof). Two facts bound every run the simulator can make:
//  - all_resident_ns: the trace's own time with every page on the GPU (kernels keep their
//    recorded starts and all-resident durations; the simulator only ever delays them), less,
//    on an issue-time trace, what the captured program's CPU faults on host accesses took in
//    its CPU gaps (host_fault_ns a 64 KB page and each block's copy back), which the simulator
//    takes out of the gaps whatever a policy does;
//  - transfer_ns: the fewest bytes any policy must move from the host to the GPU, at the host
//    link's best bandwidth, each 64 KB with a 32nd of a transfer's overhead (a transfer carries
//    one 2 MB block at most). The fewest bytes come from Belady's MIN over 64 KB big pages, with
//    bypass (a page may be served without being kept, as a remote access is), on a cache of the
//    capacity's pages: a relaxation of the GPU (no 2 MB chunk grouping, no device memory, no
//    prefetch or eviction cost), so its minimum is at most what any policy moves. A page costs a
//    copy when it holds data: after the GPU or the host has touched it, until its allocation is
//    freed; a first touch of a fresh page is populated in place, at no copy;
//  - duplex_ns: a copy of data the GPU itself had (a repeat) needs that data to have left the
//    GPU first, over the other direction of the link, unless the page was served remotely, which
//    costs a whole transfer each touch: the two directions' link times, weighed so that no
//    choice between the two escapes (sim/README.md).
// lower_bound_ns is the largest of the three. Defined for one job on one GPU (a neighbour's
// memory would be a second source).
// The measured steps (step 0 on, the set-up left out), as a run's step rows count them, are
// bounded on their own (MeasuredBound): a live run's steps are set beside that, not beside the
// whole trace's bound, whose set-up (its CPU gaps) may take longer than all its steps.
#pragma once

#include "sim/config/run_config.h"
#include "sim/core/types.h"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace faultline {

// The steps of a range (by default step 0 on): their time is at least the larger of
//  - all_resident_ns: the program's own time for them (the trace's program_step_ns, measured
//    with all its memory on the GPU), or where the trace does not say, their kernels' time
//    back to back (gpu_ns, which the GPU spends on them whatever a policy does);
//  - transfer_ns: MIN's copies made at their touches, less the capacity's pages (what a
//    policy could have put on the GPU before them), at the link time per page above.
struct StepRange {
  int64_t first = 0, last = INT64_MAX; // inclusive
  bool holds(int64_t step) const { return step >= first && step <= last; }
};

struct MeasuredBound {
  StepRange range;
  uint64_t steps = 0;
  Time program_ns = 0; // 0: the trace has no program_step_ns
  Time gpu_ns = 0;
  Time all_resident_ns = 0;
  uint64_t min_pages_moved = 0; // MIN's copies at their touches
  Time transfer_ns = 0;
  Time lower_bound_ns = 0;
};

struct LowerBound {
  Time all_resident_ns = 0;
  uint64_t capacity_big_pages = 0;
  uint64_t references = 0;       // kernel touches of big pages (once per kernel)
  uint64_t min_pages_moved = 0;  // Belady's MIN: big pages copied host -> GPU
  uint64_t min_repeat_pages = 0; // of those, copies of data the GPU had touched in the epoch
  double link_gbps = 0;          // the host link's best bandwidth, host -> GPU
  double reverse_link_gbps = 0;  // and GPU -> host
  Time transfer_ns = 0;          // the fewest copies' link time to the GPU
  Time duplex_ns = 0;            // both directions' link time, weighed (README)
  Time lower_bound_ns = 0;
  MeasuredBound measured;
};

// Reads the trace (repetitions included, trace::StepRepeater) twice. Throws TraceError as the
// reader does.
LowerBound lower_bound(const std::string& trace_path, uint64_t iterations, uint64_t capacity_chunks,
                       const config::LinkProfile& host_link, Time host_fault_ns,
                       StepRange measured = {});

nlohmann::json to_json(const LowerBound& bound);

// `faultline bound`: the bound of a trace under a run config (its capacity, host link and
// iterations; `iterations` > 0 overrides), as a document with the resolved config and the git
// revision. ConfigError for a config of more than one GPU or job.
nlohmann::json bound_document(const std::string& config_path, const std::string& trace_path,
                              uint64_t iterations, StepRange measured = {});

} // namespace faultline
