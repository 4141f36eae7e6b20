// What the live replay believes about memory, kept beside the real GPU: the trace's managed
// allocations and where each lives, the budget's residency books (sim/host/residency.h), the
// chunks placed on the neighbour GPU, the chunks that ever held data, and the pages a policy
// discarded. Exact under the budget, since only the replay and its kernels move memory. The
// books never call the device: the replay (sim/live/replay.cc) does what they say.
#pragma once

#include "sim/live/plan.h"
#include "sim/host/residency.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace faultline::live {

class Books {
public:
  Books(uint64_t budget_chunks, uint64_t peer_chunks, uint64_t peer_reserve_chunks)
      : residency_(budget_chunks), peer_chunks_(peer_chunks),
        peer_reserve_chunks_(peer_reserve_chunks) {}

  static constexpr Addr kNoAddress = ~Addr{0};

  // A managed allocation of the trace at `address` now lives at `live`, in slot `slot`.
  void add(Addr address, Bytes size, uint32_t slot, void* live);
  // It is freed: its live pointer (null if it never lived), its pages forgotten.
  void* remove(Addr address);
  // Live managed allocations, for freeing at the end.
  std::vector<void*> live_pointers() const;

  // The trace address of a live one (kNoAddress where no live allocation holds it).
  Addr to_trace(uint64_t live) const;
  // Calls f(live pointer, bytes) for each piece of the trace's [start, start + bytes) that
  // lies in a live managed allocation.
  template <typename F> void for_each_live(Addr start, Bytes bytes, F f) const;
  // As for_each_live, cut further at live 2 MB chunk boundaries: f(live pointer, bytes, chunk).
  template <typename F> void for_each_live_chunk(Addr start, Bytes bytes, F f) const;
  // A kernel's touches as live chunks and pages, through the slot table as the device reads
  // them. A live allocation that does not start on a 2 MB boundary splits each of its chunks
  // over two live ones.
  std::vector<host::ChunkPages> live_chunks(const Plan& plan, const Kernel& k) const;
  // The live 64 KB page (address / 64 KB) of each of touches [first, first + count), in order.
  std::vector<uint64_t> live_pages(const Plan& plan, uint64_t first, uint64_t count) const;

  host::Residency& residency() { return residency_; }
  const host::Residency& residency() const { return residency_; }
  // Pages come to the GPU (a kernel's or a prefetch's): resident, on the GPU not the
  // neighbour, holding data, no longer discarded.
  void arrive(const std::vector<host::ChunkPages>& chunks);
  // The range left GPU 0 (and the neighbour, whose chunks are whole).
  void forget(void* p, Bytes n);
  // The host wrote the range: its data must come over when the GPU touches it.
  void host_wrote(uint64_t chunk) { touched_.insert(chunk); }
  // Discarded pages hold dead data until a kernel or a prefetch brings them back; a page partly
  // discarded is left out of evictions too (at most two a discard stay on the GPU).
  void note_discarded(uint64_t address, Bytes n, bool dead);
  // The live runs [lo, hi) of a chunk (offsets) whose pages an eviction sends to the host: all
  // but the discarded ones, clipped to live allocations. Not only the pages the books hold: the
  // driver brings others of a faulting block in beside them (density prefetch). Not the
  // discarded: CUDA's prefetch of a discarded page undoes the discard.
  std::vector<std::pair<void*, Bytes>> eviction_runs(uint64_t chunk, Bytes lo, Bytes hi) const;

  // The neighbour GPU, a victim cache of peer_chunks chunks that keeps a reserve free.
  bool has_peer() const { return peer_chunks_ > 0; }
  bool peer_has_room() const {
    return peer_chunks_ > on_peer_.size() && peer_chunks_ - on_peer_.size() > peer_reserve_chunks_;
  }
  bool on_peer(uint64_t chunk) const { return on_peer_.count(chunk) != 0; }
  void placed_on_peer(uint64_t chunk) { on_peer_.insert(chunk); }

  // The policy's view (policies::MemoryView) for GPU 0 and the neighbour, GPU 1.
  Bytes free_bytes(unsigned gpu) const;
  ProcessorId holder(Addr address) const;
  std::vector<Addr> oldest_blocks(unsigned gpu, size_t n) const;

private:
  struct LiveAlloc {
    void* live = nullptr;
    Bytes size = 0;
  };
  struct LiveRange {
    Bytes size;
    Addr trace; // where the trace has it
  };
  host::Residency residency_;
  uint64_t peer_chunks_, peer_reserve_chunks_;
  std::unordered_set<uint64_t> on_peer_; // live chunks placed on the neighbour
  std::unordered_set<uint64_t> touched_; // live chunks ever on a GPU: the others hold no data yet
  std::unordered_map<uint64_t, uint32_t> discarded_; // live chunk -> its discarded 64 KB big pages
  std::map<Addr, LiveAlloc> live_;                   // trace address -> live
  std::map<uint64_t, LiveRange> by_live_;            // live address -> range
  std::vector<uint64_t> slot_base_;                  // slot -> live address
};

template <typename F> void Books::for_each_live(Addr start, Bytes bytes, F f) const {
  auto it = live_.upper_bound(start);
  if (it != live_.begin()) --it;
  for (; it != live_.end() && it->first < start + bytes; ++it) {
    const Addr lo = std::max(start, it->first);
    const Addr hi = std::min(start + bytes, it->first + it->second.size);
    if (lo < hi) f(static_cast<char*>(it->second.live) + (lo - it->first), hi - lo);
  }
}

template <typename F> void Books::for_each_live_chunk(Addr start, Bytes bytes, F f) const {
  for_each_live(start, bytes, [&](void* p, Bytes n) {
    for (auto at = reinterpret_cast<uint64_t>(p), end = at + n; at < end;) {
      const uint64_t next = std::min(end, (at / kBlockSize + 1) * kBlockSize);
      f(reinterpret_cast<void*>(at), next - at, at / kBlockSize);
      at = next;
    }
  });
}

} // namespace faultline::live
