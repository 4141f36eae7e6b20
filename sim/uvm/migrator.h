// The data movements the driver performs on behalf of faults, evictions, host accesses and
// policy actions: it updates the memory model and queues the copies on the links.
#pragma once

#include "sim/config/run_config.h"
#include "sim/link/link.h"
#include "sim/memory/memory_model.h"
#include "sim/run/stats.h"

namespace faultline {

// Contract: each call starts at the given time and returns when its work is done; copies queue
// on the link behind earlier ones. Calls never skip an invariant of the memory model.
class Migrator {
public:
  Migrator(MemoryModel& memory, LinkDirection& to_gpu, LinkDirection& to_host,
           const config::GpuProfile& gpu, const config::DriverConfig& driver, Stats& stats)
      : memory_(memory), to_gpu_(to_gpu), to_host_(to_host), gpu_(gpu), driver_(driver),
        stats_(stats) {}

  // Evicts victims in the model's eviction order until GPU `gpu` has a free chunk; `keep` is
  // never chosen. Synchronous, as in the driver: returns when the chunk is free.
  Time make_room(unsigned gpu, Time now, const VaBlock* keep);
  // Evicts victims in the model's eviction order, never a block of `keep` (sorted block
  // indices), until `needed` chunks are free; returns when the last eviction is done. The
  // budget mode's eviction before a kernel.
  Time make_room_keeping(unsigned gpu, Time now, uint64_t needed,
                         const std::vector<uint64_t>& keep);
  // Moves `pages` of `block` to the GPU (which must have a chunk for it or room for one).
  // Pages flagged in `prefetched` count as prefetch. Returns when the last copy lands.
  Time to_gpu(VaBlock& block, unsigned gpu, const PageMask& pages, const PageMask& prefetched,
              Time now, const char* cause);
  // Moves `pages` of `block` from the GPU to the host. Returns when the last copy lands.
  Time to_host(VaBlock& block, unsigned gpu, const PageMask& pages, Time now, const char* cause);
  // Whether faults on this block are served by remote mapping (thrashing pin).
  bool pinned(const VaBlock& block, Time now) const {
    return driver_.thrashing_detection && block.pinned_until > now;
  }

private:
  // The whole chunk back to the host, plus the driver's fixed cost of an eviction.
  Time evict(VaBlock& victim, unsigned gpu, Time now, const char* cause);
  void note_thrashing(VaBlock& block, Time now);
  Time copy_runs(LinkDirection& link, const PageMask& pages, Time now, const char* cause);

  MemoryModel& memory_;
  LinkDirection& to_gpu_;
  LinkDirection& to_host_;
  const config::GpuProfile& gpu_;
  const config::DriverConfig& driver_;
  Stats& stats_;
};

} // namespace faultline
