#include "sim/uvm/migrator.h"

#include "sim/core/error.h"

#include <algorithm>

namespace faultline {

Time Migrator::copy_runs(Route& route, const PageMask& pages, Time now, const char* cause) {
  Time end = now;
  pages.for_each_run([&](unsigned, unsigned count) {
    end = std::max(end, route.transfer(now, count * kPageSize, cause).end);
  });
  return end;
}

// A fault service's copies into a block: a copy each run of pages, as the fault benchmarks
// price scattered pages (20-25 us a page apart on H200s, experiments/live/data/h200-fault-fill/
// steps), unless they leave the block whole on the GPU (the density prefetcher filled it):
// then the runs go in one push, as an eviction's do (copy_evicted: eviction_run_ns each beyond
// the first). 16 scattered pages faulted beside 16 the GPU held cost the GPU 120-170 us a block
// against 280-360 for 16 faulted into an empty block (the same runs, the block left in part),
// on three H200s (the same folder, fill).
Time Migrator::copy_in(Route& route, const PageMask& pages, bool whole, Time now,
                       const char* cause) {
  if (!whole || pages.none()) return copy_runs(route, pages, now, cause);
  return route.transfer(now, pages.count() * kPageSize, cause).end + extra_runs_ns(pages);
}

// The driver copies an evicted chunk's runs of pages in one push and waits once: one transfer of
// all its bytes, and each run beyond the first costs eviction_run_ns (1.7-7 us on H200s, where a
// copy of its own had cost the link's overhead, 18.5 us: experiments/live/data/h200-c9770d01/).
// HUVM's large-page eviction copies the chunk whole: no run costs more.
Time Migrator::copy_evicted(Route& route, const PageMask& pages, Time now, const char* cause) {
  if (pages.none()) return now;
  const Time extra = driver_.block_eviction ? 0 : extra_runs_ns(pages);
  return route.transfer(now, pages.count() * kPageSize, cause).end + extra;
}

Time Migrator::extra_runs_ns(const PageMask& pages) const {
  Time runs = 0;
  pages.for_each_run([&](unsigned, unsigned) { ++runs; });
  return runs > 1 ? (runs - 1) * gpu_.eviction_run_ns : 0;
}

Time Migrator::make_room(unsigned gpu, Time now, const VaBlock* keep) {
  std::multiset<Time>& leaving = leaving_[gpu];
  for (;;) {
    while (!leaving.empty() && *leaving.begin() <= now) leaving.erase(leaving.begin());
    // Chunks taken since (device memory) leave fewer free than are leaving: the latest count.
    while (leaving.size() > memory_.chunks_free(gpu)) leaving.erase(leaving.begin());
    if (memory_.chunks_free(gpu) > leaving.size()) return now;
    if (!leaving.empty()) {
      now = *leaving.begin();
      continue;
    }
    VaBlock* foreign = memory_.oldest_foreign(gpu);
    if (foreign && foreign != keep) {
      now = reclaim(*foreign, gpu, now);
      continue;
    }
    VaBlock* victim = memory_.oldest(gpu);
    if (victim == keep) victim = victim->next[gpu];
    if (!victim) {
      throw SimulationError("GPU " + std::to_string(gpu) + " needs a chunk but every chunk is " +
                            "held by device memory or the block being serviced; raise capacity");
    }
    now = evict(*victim, gpu, now, "eviction", false);
  }
}

Time Migrator::evict(VaBlock& victim, unsigned gpu, Time now, const char* cause, bool by_call) {
  ++stats_.evictions;
  const PageMask pages = victim.resident[gpu_processor(gpu)];
  if (driver_.hierarchical_eviction && victim.home == gpu) {
    // HUVM's driver: the NVLink neighbour with room that holds the fewest harvested chunks.
    int best = -1;
    for (unsigned peer : topology_.nvlink_neighbours(gpu))
      if (peer_has_room(peer) &&
          (best < 0 || memory_.foreign_chunks(peer) < memory_.foreign_chunks(unsigned(best))))
        best = static_cast<int>(peer);
    if (best >= 0) return to_peer(victim, gpu, static_cast<unsigned>(best), pages, now, cause);
  }
  const Time end = to_host(victim, gpu, pages, now, cause, true) + eviction_cost(pages);
  return by_call ? end + populate_on_host(victim, victim.allocated, now) : end;
}

Time Migrator::policy_evict(VaBlock& block, unsigned gpu, const PageMask& range, Time now) {
  const PageMask held = range & block.resident[gpu_processor(gpu)];
  const Time end = to_host(block, gpu, held, now, "policy eviction", true) + eviction_cost(held);
  return end + populate_on_host(block, range, now);
}

// A prefetch to the host of a chunk the GPU populated in part (never-touched pages beside its
// own) costs 350-530 us more on H200s than the same pages of host data, whatever the GPU holds
// (a full chunk: 180-270 us in all), and the chunk's other pages are then on the host: the GPU's
// next touch of one migrates 64 KB in and a later eviction of the chunk costs as host data's
// does (residency_probe refill, experiments/live/data/h200-d5a16a75/refill.txt). A call over a
// chunk nobody touched costs as much (536 us on b6da2e9e, data/h200-b6da2e9e/refill.txt).
Time Migrator::populate_on_host(VaBlock& block, const PageMask& range, Time now) {
  const PageMask unheld = range & block.unpopulated();
  const PageMask fill = calls_cover_discarded_ ? unheld : unheld.minus(block.left_out);
  if (fill.none()) return 0;
  // Pages a policy discarded cost the call far less than never-touched ones.
  const Time cost =
      fill.minus(block.left_out).any() ? gpu_.eviction_populate_ns : gpu_.eviction_discarded_ns;
  stats_.pages_populated_on_host += fill.count();
  memory_.move(block, kHost, fill, now);
  return cost;
}

// The driver's work beside an eviction's copy: per chunk, and per 64 KB it copies (a chunk
// holding a few pages costs much less than a full one: experiments/live/data/h200-2f4aa42a/).
Time Migrator::eviction_cost(const PageMask& pages) const {
  return gpu_.eviction_ns + static_cast<Time>(pages.count()) * gpu_.eviction_page_ns /
                                static_cast<Time>(kPagesPerBigPage);
}

Time Migrator::reclaim(VaBlock& foreign, unsigned gpu, Time now) {
  const PageMask held = foreign.resident[gpu_processor(gpu)];
  if (held.minus(foreign.host_backup).none()) {
    ++stats_.reclaims_dropped;
    const Time ready = std::max(now, foreign.backup_ready_at);
    memory_.move(foreign, kHost, held, ready); // the host copy is current: nothing to copy
    return ready;
  }
  ++stats_.reclaims_copied;
  return to_host(foreign, gpu, held, now, "reclaim", true) + gpu_.eviction_ns;
}

bool Migrator::peer_has_room(unsigned peer) const {
  const uint64_t reserve = (driver_.peer_reserve_bytes + kBlockSize - 1) / kBlockSize;
  return memory_.chunks_free(peer) > reserve;
}

Time Migrator::to_peer(VaBlock& block, unsigned from, unsigned peer, const PageMask& range,
                       Time now, const char* cause) {
  const PageMask pages = range & block.resident[gpu_processor(from)];
  stats_.prefetch_wasted += (block.prefetched_unused[from] & pages).count();
  block.prefetched_unused[from] = block.prefetched_unused[from].minus(pages);
  ++stats_.peer_evictions;
  stats_.pages_to_peer += pages.count();
  memory_.move(block, gpu_processor(peer), pages, now);
  const Time landed =
      copy_evicted(route(gpu_processor(from), gpu_processor(peer)), pages, now, cause);
  if (driver_.peer_write_back) {
    block.host_backup |= pages;
    block.backup_ready_at =
        std::max(block.backup_ready_at,
                 copy_evicted(route(gpu_processor(peer), kHost), pages, landed, "write-back"));
    stats_.pages_written_back += pages.count();
  }
  block.ready_at[peer] = std::max(block.ready_at[peer], landed);
  return landed + gpu_.peer_eviction_ns;
}

Time Migrator::stage_on_peer(VaBlock& block, unsigned peer, const PageMask& pages, Time now) {
  const MemoryModel::Moved moved = memory_.move(block, gpu_processor(peer), pages, now);
  stats_.pages_staged += moved.from[kHost].count();
  const Time end = copy_runs(route(kHost, gpu_processor(peer)), moved.from[kHost], now, "stage");
  block.ready_at[peer] = std::max(block.ready_at[peer], end);
  if (peer != block.home) { // the host copy stays current: the neighbour may drop it
    block.host_backup |= moved.from[kHost];
    block.backup_ready_at = std::max(block.backup_ready_at, end);
  }
  return end;
}

Time Migrator::free_chunk(VaBlock& block, unsigned gpu, Time now, const char* cause) {
  return block.home != gpu ? reclaim(block, gpu, now) : evict(block, gpu, now, cause, true);
}

Time Migrator::to_gpu(VaBlock& block, unsigned gpu, const PageMask& pages,
                      const PageMask& prefetched, Time now, const char* cause, bool fault) {
  const bool fresh = !block.chunk[gpu];
  if (fresh) note_thrashing(block, now);
  const PageMask unpopulated = block.unpopulated() & pages;
  const MemoryModel::Moved moved = memory_.move(block, gpu_processor(gpu), pages, now);
  stats_.pages_h2d += moved.from[kHost].count();
  stats_.pages_populated += unpopulated.count();
  PageMask arrived = moved.from[kHost] | unpopulated;
  const bool whole = fault && block.allocated.minus(block.resident[gpu_processor(gpu)]).none();
  Time end = copy_in(route(kHost, gpu_processor(gpu)), moved.from[kHost], whole,
                     moved.from[kHost].any() ? std::max(now, block.host_ready_at) : now, cause);
  for (unsigned peer = 0; peer < memory_.gpus(); ++peer) {
    const PageMask& from_peer = moved.from[gpu_processor(peer)];
    if (peer == gpu || from_peer.none()) continue;
    stats_.pages_peer_in += from_peer.count();
    arrived |= from_peer;
    const Time ready = std::max(now, block.ready_at[peer]); // a staged copy may be in flight
    end = std::max(end, copy_in(route(gpu_processor(peer), gpu_processor(gpu)), from_peer, whole,
                                ready, cause));
  }
  arrived &= prefetched;
  block.prefetched_unused[gpu] |= arrived;
  stats_.prefetch_issued += arrived.count();
  stats_.peak_chunks = std::max(stats_.peak_chunks, memory_.chunks_used(gpu));
  return end;
}

Time Migrator::to_host(VaBlock& block, unsigned gpu, const PageMask& pages, Time now,
                       const char* cause, bool eviction) {
  stats_.prefetch_wasted += (block.prefetched_unused[gpu] & pages).count();
  block.prefetched_unused[gpu] = block.prefetched_unused[gpu].minus(pages);
  const MemoryModel::Moved moved = memory_.move(block, kHost, pages, now);
  const PageMask& copied = moved.from[gpu_processor(gpu)];
  stats_.pages_d2h += copied.count();
  if (copied.any() && block.thrash_window_start < 0) block.thrash_window_start = now;
  Route& down = route(gpu_processor(gpu), kHost);
  const Time end =
      eviction ? copy_evicted(down, copied, now, cause) : copy_runs(down, copied, now, cause);
  if (copied.any()) block.host_ready_at = std::max(block.host_ready_at, end);
  return end;
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
