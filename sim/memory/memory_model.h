// Where every managed page lives: per processor (host, GPU i), tracked at 4 KB pages inside
// 64 KB big pages inside 2 MB VA blocks. GPU capacity is counted in 2 MB root chunks: a VA block
// with any page on a GPU holds one of that GPU's chunks.
#pragma once

#include "sim/memory/page_mask.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

namespace faultline {

struct VaBlock {
  uint64_t index = 0;                   // base address / 2 MB
  unsigned home = 0;                    // the GPU whose job owns the block
  PageMask allocated;                   // pages inside a live managed allocation
  PageMask resident[1 + kMaxGpus];      // [kHost], [gpu_processor(i)]; disjoint sets
  PageMask remote[kMaxGpus];            // host-resident pages that GPU i maps over its link
  PageMask access_remotely;             // pages advised to stay on the host, mapped on fault
  PageMask prefetched_unused[kMaxGpus]; // brought by a prefetch, not yet touched
  // Pages a policy discarded while they held data (cudaMemDiscardBatchAsync), not populated
  // since: the driver's next fault on one costs far more than a first touch
  // (experiments/live/data/h200-migration-mix/).
  PageMask discarded;
  // Discarded pages a read fault brought to a GPU since: a read does not undo a discard, so the
  // driver still charges the page's first write as a discarded page's fault, though the page is
  // resident (experiments/live/data/h200-discard-history/). Always resident on a GPU.
  PageMask read_since_discard;
  // Pages a policy discarded since their allocation, whatever they held: the replay's eviction
  // calls leave them out (sim/live/books.cc), so an eviction never populates them on the host.
  PageMask left_out;
  // Pages on a GPU other than home whose host copy is current from backup_ready_at on (a
  // victim cache written back in the background): that GPU may drop them without a copy.
  PageMask host_backup;
  Time backup_ready_at = 0;
  // Big pages (bit i: the i-th 64 KB) a kernel of the trace touched since the host last did: on
  // the GPU in the captured program itself, which had memory enough, so the host's touch of one
  // took a CPU fault there, whose time the trace's CPU gaps already hold.
  uint32_t captured_on_gpu = 0;
  bool chunk[kMaxGpus] = {};
  Time ready_at[kMaxGpus] = {}; // GPU i may use its pages from this time (copies in flight)
  // The host holds the pages a GPU last sent it from this time on: a copy back to a GPU (a
  // migration or a remote access) cannot start before the copy out has landed.
  Time host_ready_at = 0;
  Time first_resident[kMaxGpus] = {};
  uint32_t arrivals[kMaxGpus] = {}; // times GPU i took a chunk for the block (tells stays apart)
  // Thrashing detection: returns to a GPU within the current lapse window; -1 until the block
  // has first been evicted from a GPU.
  Time thrash_window_start = -1;
  uint32_t thrash_count = 0;
  Time pinned_until = 0;
  // Eviction order, one intrusive list per GPU.
  VaBlock* prev[kMaxGpus] = {};
  VaBlock* next[kMaxGpus] = {};

  Addr base() const { return index * kBlockSize; }
  // Allocated pages that no processor holds: the next touch populates them without a copy.
  PageMask unpopulated() const;
};

// Contract: every mutation keeps the invariants that check_invariants() verifies: a page is
// resident in at most one place and only if allocated; remote mappings point at host-resident
// pages; a GPU holds a chunk exactly for the blocks with pages on it, and never more chunks than
// its capacity; a host backup covers only pages held by a GPU other than the block's home. The
// model never chooses victims itself; the eviction order is exposed so that
// the driver (or a policy) picks.
class MemoryModel {
public:
  MemoryModel(unsigned gpus, uint64_t capacity_chunks); // every GPU the same
  explicit MemoryModel(std::vector<uint64_t> capacity_chunks);

  unsigned gpus() const { return gpus_; }
  uint64_t capacity_chunks(unsigned gpu = 0) const { return capacity_chunks_[gpu]; }
  uint64_t chunks_used(unsigned gpu) const { return chunks_used_[gpu]; }
  uint64_t chunks_free(unsigned gpu) const { return capacity_chunks_[gpu] - chunks_used_[gpu]; }
  uint64_t device_chunks(unsigned gpu) const { return device_chunks_[gpu]; }
  // Chunks of GPU `gpu` held by blocks of another GPU's job (harvested memory).
  uint64_t foreign_chunks(unsigned gpu) const { return foreign_chunks_[gpu]; }

  // `home`: the GPU whose job allocated the range.
  void add_managed(Addr address, Bytes size, unsigned home = 0);
  // Drops the range's pages everywhere (no write-back) and returns chunks that become empty.
  void remove_managed(Addr address, Bytes size);
  // cudaMalloc memory: pinned on the GPU, takes chunks until released.
  void reserve_device(unsigned gpu, uint64_t chunks);
  void release_device(unsigned gpu, uint64_t chunks);

  VaBlock* find(uint64_t index) {
    auto it = blocks_.find(index);
    return it == blocks_.end() ? nullptr : &it->second;
  }
  // Calls f(block, pages) for every block overlapping [address, address + size).
  template <class F> void for_each_block(Addr address, Bytes size, F&& f);

  // Moves `pages` to `to`. Returns the pages that came from elsewhere, per source processor
  // (index = processor), so the caller can charge the copies; unpopulated pages need none.
  // Moving to a GPU requires its chunk (take_chunk first).
  struct Moved {
    PageMask from[1 + kMaxGpus];
  };
  Moved move(VaBlock& block, ProcessorId to, const PageMask& pages, Time now);
  // Drops pages without a copy anywhere (discard).
  void drop(VaBlock& block, const PageMask& pages);
  // Drops pages as a policy's discard does: those that held data anywhere become discarded.
  void discard(VaBlock& block, const PageMask& pages);
  void take_chunk(VaBlock& block, unsigned gpu, Time now);

  // Eviction order: the head is the next victim. FIFO order appends when a block takes a
  // chunk; LRU additionally moves a block to the tail when touched.
  VaBlock* oldest(unsigned gpu) const { return head_[gpu]; }
  // The first block in `gpu`'s eviction order that belongs to another GPU's job, or null.
  VaBlock* oldest_foreign(unsigned gpu) const;
  void touch(VaBlock& block, unsigned gpu);

  // Throws SimulationError describing the first violated invariant.
  void check_invariants() const;
  size_t blocks() const { return blocks_.size(); }
  uint64_t resident_pages(ProcessorId p) const;

private:
  void release_chunk_if_empty(VaBlock& block, unsigned gpu);
  void unlink(VaBlock& block, unsigned gpu);
  void append(VaBlock& block, unsigned gpu);

  unsigned gpus_;
  std::vector<uint64_t> capacity_chunks_;
  std::vector<uint64_t> chunks_used_;
  std::vector<uint64_t> device_chunks_;
  std::vector<uint64_t> foreign_chunks_;
  std::unordered_map<uint64_t, VaBlock> blocks_;
  VaBlock* head_[kMaxGpus] = {};
  VaBlock* tail_[kMaxGpus] = {};
};

template <class F> void MemoryModel::for_each_block(Addr address, Bytes size, F&& f) {
  const Addr end = address + size;
  for (uint64_t index = address / kBlockSize; index * kBlockSize < end; ++index) {
    const Addr lo = std::max(address, index * kBlockSize);
    const Addr hi = std::min(end, (index + 1) * kBlockSize);
    const unsigned first = static_cast<unsigned>((lo - index * kBlockSize) / kPageSize);
    const unsigned last =
        static_cast<unsigned>((hi - index * kBlockSize + kPageSize - 1) / kPageSize);
    VaBlock* block = find(index);
    if (block) f(*block, PageMask::range(first, last - first));
  }
}

} // namespace faultline
