// What `faultline trace stats` and `faultline trace dump` print: one streaming pass each.
#pragma once

#include "sim/core/types.h"
#include "sim/trace/format.h"

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace faultline::trace {

// One training step's share of a trace (the header's "steps"; set-up has step -1).
struct StepCounts {
  int64_t step = 0;
  uint64_t first_record = 0;
  Time start_ns = 0;
  uint64_t records = 0;
  uint64_t kernels = 0;
  uint64_t accesses = 0;
  Time compute_ns = 0; // its kernels' durations, summed
  Time span_ns = 0;    // from its start to the next step's (the last: to the trace's end)
  Time program_ns = 0; // the program's own time for it (the header's program_step_ns; 0: none)
};

struct TraceStats {
  uint64_t records = 0;
  uint64_t kernels = 0;
  uint64_t distinct_kernel_names = 0;
  uint64_t accesses = 0;
  uint64_t allocations = 0;
  uint64_t host_accesses = 0;
  uint64_t syncs = 0;
  Bytes peak_managed_bytes = 0; // live managed bytes at their peak
  // Every managed allocation's size, summed (a free does not subtract): the most the GPU can
  // populate without a copy, short of discarded pages.
  Bytes allocated_managed_bytes = 0;
  // The host's reads, summed: a read of a GPU-resident page may leave a copy on both sides, so
  // that page can leave the GPU again without coming back.
  Bytes host_read_bytes = 0;
  Bytes peak_device_bytes = 0;
  uint64_t footprint_chunks = 0; // peak of 2 MB chunks the live allocations span
  uint64_t distinct_blocks = 0;  // distinct 2 MB VA blocks accessed by kernels
  uint64_t distinct_big_pages = 0;
  Time compute_ns = 0; // summed kernel durations
  Time span_ns = 0;    // first to last record
  // Reuse: accesses to a 64 KB big page that an earlier kernel also touched, over all accesses.
  double reuse_fraction = 0;
  uint64_t compressed_bytes = 0;
  // Training steps: 1 for a trace whose header declares none. by_step starts with the set-up
  // (step -1) when records precede step 0.
  uint64_t steps = 1;
  std::vector<StepCounts> by_step;
  uint32_t version = 0;
  Timeline timeline = Timeline::kSerial;
  Time sync_wait_ns = 0; // the CPU's recorded waits in syncs, summed
  Time queued_ns = 0;    // the kernels' recorded queue delays (issue to GPU start), summed

  Bytes footprint_bytes() const { return footprint_chunks * kBlockSize; }
  nlohmann::json to_json() const;
};

TraceStats compute_stats(const std::string& path);
// One record as `faultline trace dump` writes it (and the Python API yields it).
nlohmann::json record_json(const Record& r);
// Writes one JSON object per line: the header first, then each record.
void dump(const std::string& path, std::ostream& out);

} // namespace faultline::trace
