#include "sim/uvm/migrator.h"

#include "sim/core/error.h"

#include <algorithm>

namespace faultline {

Time Migrator::copy_runs(LinkDirection& link, const PageMask& pages, Time now, const char* cause) {
  Time end = now;
  pages.for_each_run([&](unsigned, unsigned count) {
    end = std::max(end, link.transfer(now, count * kPageSize, cause).end);
  });
  return end;
}

Time Migrator::make_room(unsigned gpu, Time now, const VaBlock* keep) {
  while (memory_.chunks_free(gpu) == 0) {
    VaBlock* victim = memory_.oldest(gpu);
    if (victim == keep) victim = victim->next[gpu];
    if (!victim) {
      throw SimulationError("GPU " + std::to_string(gpu) + " needs a chunk but every chunk is " +
                            "held by device memory or the block being serviced; raise capacity");
    }
    now = evict(*victim, gpu, now, "eviction");
  }
  return now;
}

Time Migrator::evict(VaBlock& victim, unsigned gpu, Time now, const char* cause) {
  ++stats_.evictions;
  return to_host(victim, gpu, victim.resident[gpu_processor(gpu)], now, cause) + gpu_.eviction_ns;
}

Time Migrator::make_room_keeping(unsigned gpu, Time now, uint64_t needed,
                                 const std::vector<uint64_t>& keep) {
  VaBlock* victim = memory_.oldest(gpu);
  while (memory_.chunks_free(gpu) < needed && victim) {
    VaBlock* next = victim->next[gpu];
    if (!std::binary_search(keep.begin(), keep.end(), victim->index))
      now = evict(*victim, gpu, now, "budget eviction");
    victim = next;
  }
  return now;
}

Time Migrator::to_gpu(VaBlock& block, unsigned gpu, const PageMask& pages,
                      const PageMask& prefetched, Time now, const char* cause) {
  const bool fresh = !block.chunk[gpu];
  if (fresh) note_thrashing(block, now);
  const PageMask unpopulated = block.unpopulated() & pages;
  const MemoryModel::Moved moved = memory_.move(block, gpu_processor(gpu), pages, now);
  stats_.pages_h2d += moved.from[kHost].count();
  stats_.pages_populated += unpopulated.count();
  const PageMask arrived = (moved.from[kHost] | unpopulated) & prefetched;
  block.prefetched_unused[gpu] |= arrived;
  stats_.prefetch_issued += arrived.count();
  stats_.peak_chunks = std::max(stats_.peak_chunks, memory_.chunks_used(gpu));
  return copy_runs(to_gpu_, moved.from[kHost], now, cause);
}

Time Migrator::to_host(VaBlock& block, unsigned gpu, const PageMask& pages, Time now,
                       const char* cause) {
  stats_.prefetch_wasted += (block.prefetched_unused[gpu] & pages).count();
  block.prefetched_unused[gpu] = block.prefetched_unused[gpu].minus(pages);
  const MemoryModel::Moved moved = memory_.move(block, kHost, pages, now);
  const PageMask& copied = moved.from[gpu_processor(gpu)];
  stats_.pages_d2h += copied.count();
  if (copied.any() && block.thrash_window_start < 0) block.thrash_window_start = now;
  return copy_runs(to_host_, copied, now, cause);
}

// A block that keeps coming back to the GPU soon after it left is thrashing; after
// `thrashing_threshold` returns within the lapse it is pinned to the host and mapped remotely.
void Migrator::note_thrashing(VaBlock& block, Time now) {
  if (!driver_.thrashing_detection || block.thrash_window_start < 0) return;
  if (now - block.thrash_window_start > driver_.thrashing_lapse_ns) {
    block.thrash_window_start = now;
    block.thrash_count = 1;
    return;
  }
  if (++block.thrash_count >= driver_.thrashing_threshold) {
    block.pinned_until = now + driver_.thrashing_pin_ns;
    block.thrash_count = 0;
    ++stats_.thrashing_pins;
  }
}

} // namespace faultline
