// What the live replay believes is on the GPU, in 2 MB chunks of 64 KB pages, and the budget it
// enforces: before a kernel or a prefetch would need more chunks than the budget, the oldest
// resident chunks it does not need go back to the host (first residency first, as the driver
// evicts). Addresses are the trace's; the replay translates them to live ones.
#pragma once

#include "sim/core/types.h"

#include <cstddef>
#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

namespace faultline::live {

// Contract: the number of resident chunks never exceeds the budget after make_room(); pages are
// resident from admit() until evicted() or dropped. Deterministic.
class Residency {
public:
  explicit Residency(uint64_t budget_chunks) : budget_(budget_chunks) {}

  // A 2 MB chunk (address / 2 MB) and some of its 64 KB pages, one bit each.
  struct ChunkPages {
    uint64_t chunk;
    uint32_t pages;
  };
  // Big pages (address / 64 KB) grouped by chunk, chunks in order of first appearance.
  static std::vector<ChunkPages> group(const std::vector<uint64_t>& big_pages);

  // Chunks to evict (oldest first) so that the chunks in `needed` fit; never one of those.
  // Removes them from the model.
  std::vector<uint64_t> make_room(const std::vector<ChunkPages>& needed);
  // Marks the pages resident (call after make_room with the same pages); new chunks become the
  // youngest in the order given.
  void admit(const std::vector<ChunkPages>& pages);

  // Pages left the GPU (evicted or discarded).
  void remove(uint64_t first_big_page, uint64_t count);
  // Device (cudaMalloc) memory the trace holds takes budget, as in the simulator.
  void reserve(int64_t chunks) { reserved_ += chunks; }

  uint64_t budget_chunks() const { return budget_; }
  uint64_t available_chunks() const;
  uint64_t resident_chunks() const { return masks_.size(); }
  uint64_t peak_chunks() const { return peak_; }
  bool resident(uint64_t big_page) const;
  // The pages of c that are not resident.
  uint32_t absent(const ChunkPages& c) const {
    auto it = masks_.find(c.chunk);
    return it == masks_.end() ? c.pages : c.pages & ~it->second;
  }
  bool holds_chunk(uint64_t chunk) const { return masks_.count(chunk) != 0; }
  // Up to n resident chunks, next victim first.
  std::vector<uint64_t> oldest(size_t n) const {
    std::vector<uint64_t> out;
    for (auto it = order_.begin(); it != order_.end() && out.size() < n; ++it) out.push_back(*it);
    return out;
  }

private:
  void drop_chunk(uint64_t chunk);

  uint64_t budget_;
  int64_t reserved_ = 0;
  uint64_t peak_ = 0;
  std::unordered_map<uint64_t, uint32_t> masks_; // chunk -> resident 64 KB pages
  std::list<uint64_t> order_;                    // chunks, oldest residency first
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> where_;
};

} // namespace faultline::live
