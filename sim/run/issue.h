// The CPU's rules on an issue-time trace (traces/FORMAT.md, timeline "issue"), shared by the
// simulator's job and `faultline bound`'s all-resident time so that both play one timeline.
#pragma once

#include "sim/config/run_config.h"
#include "sim/trace/format.h"

namespace faultline {

// Whether the CPU waits for the GPU's queue to drain before the record returns: a sync, a touch
// of managed memory (the program synchronised first, or raced the GPU), and a free of anything
// but an allocator block (cudaFree synchronises; a block's free is the allocator's, in stream
// order). `freed` is the kind of what a free releases; other records ignore it.
inline bool cpu_waits_for_gpu(const trace::Record& r, trace::MemoryKind freed) {
  switch (r.type) {
  case trace::RecordType::kSync:
  case trace::RecordType::kHostAccess:
    return true;
  case trace::RecordType::kFree:
    return freed != trace::MemoryKind::kAllocatorBlock;
  default:
    return false;
  }
}

// The recorded time the CPU was done with the record, from which the next one's distance counts:
// a sync's end after its wait, else its issue.
inline Time cpu_done(const trace::Record& r) {
  return r.type == trace::RecordType::kSync ? r.sync.time + r.sync.wait : r.time();
}

// What the captured program's CPU faults took when a host access pulled `pages` 64 KB pages of
// one 2 MB block back from the GPU, priced as this run prices a host fault: the job takes it out
// of the CPU's gaps, and the bound takes the same, block by block, so it never exceeds the job.
inline Time captured_host_faults_ns(uint64_t pages, Time host_fault_ns,
                                    const config::LinkCurve& reverse) {
  return static_cast<Time>(pages) * host_fault_ns + reverse.transfer_ns(pages * kBigPageSize);
}

} // namespace faultline
