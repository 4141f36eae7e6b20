// The data movements the driver performs on behalf of faults, evictions, host accesses and
// policy actions: it updates the memory model and queues the copies on the links.
#pragma once

#include "sim/config/run_config.h"
#include "sim/memory/memory_model.h"
#include "sim/stats/stats.h"
#include "sim/topology/topology.h"

#include <set>
#include <vector>

namespace faultline {

// Contract: each call starts at the given time and returns when its work is done; copies queue
// on the route's links behind earlier ones. Calls never skip an invariant of the memory model.
// One migrator serves one job: its statistics are that job's, its GPU profile that job's GPU's.
class Migrator {
public:
  Migrator(MemoryModel& memory, Topology& topology, const config::GpuProfile& gpu,
           const config::DriverConfig& driver, Stats& stats)
      : memory_(memory), topology_(topology), gpu_(gpu), driver_(driver), stats_(stats),
        leaving_(memory.gpus()) {}

  // Frees chunks of GPU `gpu` until one is free; `keep` is never chosen. A chunk whose pages
  // are still being copied out (leave_at) is not free before its copy lands: the first to land
  // is waited for before anything more is evicted, since an eviction would queue behind it on
  // the same link. Then another job's blocks (harvested memory): dropped when their host
  // backup is ready, else evicted to the host. Then the model's eviction order. Synchronous,
  // as in the driver: returns when the chunk is free.
  Time make_room(unsigned gpu, Time now, const VaBlock* keep);
  // A chunk of GPU `gpu` that the model already counts free holds its old pages until `end`,
  // when their copy out lands (a policy's eviction on a GPU whose memory is full: the driver
  // cannot hand the chunk to other data before). Every later taker of a chunk on `gpu` comes
  // through make_room().
  void leave_at(unsigned gpu, Time end) { leaving_[gpu].insert(end); }
  // Frees the chunk `block` holds on GPU `gpu`: another job's block (harvested memory) is
  // reclaimed as make_room() does, the job's own evicted. Returns when it is free. The budget's
  // eviction of a victim its rules chose (sim/host/budget.h).
  Time free_chunk(VaBlock& block, unsigned gpu, Time now, const char* cause);
  // Moves `pages` of `block` to the GPU (which must have a chunk for it or room for one).
  // Pages flagged in `prefetched` count as prefetch. Returns when the last copy lands.
  // `fault`: the fault path's service, whose copies cost as one when they leave the block
  // whole on the GPU (see copy_in).
  Time to_gpu(VaBlock& block, unsigned gpu, const PageMask& pages, const PageMask& prefetched,
              Time now, const char* cause, bool fault = false);
  // Moves `pages` of `block` from the GPU to the host. Returns when the last copy lands. An
  // eviction copies them in one transfer when the driver evicts whole blocks.
  Time to_host(VaBlock& block, unsigned gpu, const PageMask& pages, Time now, const char* cause,
               bool eviction = false);
  // A policy's eviction of a block's pages in `range` to the host: the live replay makes it with
  // the same 2 MB call as the budget's, so it costs the driver's fixed eviction work too, and
  // the call populates the range's pages nobody holds (populate_on_host).
  Time policy_evict(VaBlock& block, unsigned gpu, const PageMask& range, Time now);
  // A 2 MB call to the host over `range` of `block` (the replay's budget and policy evictions)
  // populates there the pages nobody holds: the GPU's next touch migrates them. The replay's
  // calls leave out the pages a policy discarded (sim/live/books.cc); the program's cover them
  // (sim/program: set_calls_cover_discarded), so there they are populated too, and no longer
  // discarded to the fault path. Returns the call's extra cost: eviction_populate_ns if it
  // populated any never-touched page, eviction_discarded_ns if only discarded ones, else 0.
  Time populate_on_host(VaBlock& block, const PageMask& range, Time now);
  void set_calls_cover_discarded(bool on) { calls_cover_discarded_ = on; }
  // Whether GPU `peer` can take another job's chunk and keep its reserve free.
  bool peer_has_room(unsigned peer) const;
  // Moves the pages of `block` held by GPU `from` to GPU `peer` (which must have room) as a
  // victim-cache entry, then writes them back to the host in the background so that the peer
  // can drop them without a copy. Returns when the copy to the peer lands.
  Time to_peer(VaBlock& block, unsigned from, unsigned peer, const PageMask& pages, Time now,
               const char* cause);
  // Moves pages of `block` from the host to GPU `peer` (room checked by the caller) ahead of
  // their use on another GPU: the first leg of a multi-path prefetch.
  Time stage_on_peer(VaBlock& block, unsigned peer, const PageMask& pages, Time now);
  // Whether faults on this block are served by remote mapping (thrashing pin).
  bool pinned(const VaBlock& block, Time now) const {
    return driver_.thrashing_detection && block.pinned_until > now;
  }

private:
  // The whole chunk back to the host, plus the driver's fixed cost of an eviction.
  // `by_call`: the replay's 2 MB call to the host, not the driver's own eviction.
  Time evict(VaBlock& victim, unsigned gpu, Time now, const char* cause, bool by_call);
  // GPU `gpu` takes back the chunk another job's block holds on it.
  Time reclaim(VaBlock& foreign, unsigned gpu, Time now);
  void note_thrashing(VaBlock& block, Time now);
  Time copy_runs(Route& route, const PageMask& pages, Time now, const char* cause);
  Time copy_in(Route& route, const PageMask& pages, bool whole, Time now, const char* cause);
  Time copy_evicted(Route& route, const PageMask& pages, Time now, const char* cause);
  // What the runs of `pages` beyond the first add to a push that copies them all.
  Time extra_runs_ns(const PageMask& pages) const;
  Time eviction_cost(const PageMask& pages) const;
  Route& route(ProcessorId from, ProcessorId to) { return topology_.route(from, to); }

  MemoryModel& memory_;
  Topology& topology_;
  const config::GpuProfile& gpu_;
  const config::DriverConfig& driver_;
  Stats& stats_;
  bool calls_cover_discarded_ = false;       // eviction calls over discarded pages (the program's)
  std::vector<std::multiset<Time>> leaving_; // per GPU: when chunks still copying out are free
};

} // namespace faultline
