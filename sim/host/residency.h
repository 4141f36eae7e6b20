// What a live backend (the replay, sim/live; the program run, sim/program) believes is on the
// GPU, in 2 MB chunks of 64 KB big pages, and the budget it enforces by the budget's rules
// (budget.h): before a kernel or a prefetch would need more chunks than the budget, the oldest
// resident chunks it does not need go back to the host (first residency first, as the driver
// evicts). Chunks are live addresses / 2 MB.
#pragma once

#include "sim/core/types.h"
#include "sim/host/budget.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

namespace faultline::host {

// Contract: the number of resident chunks never exceeds the budget after make_room(); pages are
// resident from admit() until evicted() or dropped. Deterministic.
class Residency : public ChunkBooks {
public:
  
  explicit Residency(uint64_t budget_chunks) : budget_(budget_chunks) {}

  // Chunks to evict (oldest first) so that the chunks in `needed` fit; never one of those.
  // Removes them from the model. `what` names the need in the refusal (budget::victims). With
  // `victim_pages`, the big pages each victim held, in the same order.
  std::vector<uint64_t> make_room(
      const std::vector<ChunkPages>& needed,
      const std::function<std::string()>& what = [] { return std::string("a kernel"); },
      std::vector<uint32_t>* victim_pages = nullptr);
  // Marks the pages resident (call after make_room with the same pages); new chunks become the
  // youngest in the order given.
  void admit(const std::vector<ChunkPages>& pages);

  // Pages left the GPU (evicted or discarded).
  void remove(uint64_t first_big_page, uint64_t count);
  // Device (cudaMalloc) memory the trace holds takes budget, as in the simulator.
  void reserve(int64_t chunks) { reserved_ += chunks; }

  uint64_t budget_chunks() const { return budget_; }
  uint64_t available_chunks() const;
  // host::ChunkBooks
  uint32_t resident_pages(uint64_t chunk) const override {
    auto it = masks_.find(chunk);
    return it == masks_.end() ? 0 : it->second;
  }
  bool holds(uint64_t chunk) const override { return masks_.count(chunk) != 0; }
  uint64_t resident_chunks() const override { return masks_.size(); }
  uint64_t room_chunks() const override { return available_chunks(); }
  void for_each_victim(const std::function<bool(uint64_t)>& f) const override {
    for (auto it = order_.begin(); it != order_.end();)
      if (!f(*it++)) return; // past it first: f may drop that chunk
  }
  uint64_t peak_chunks() const { return peak_; }
  bool resident(uint64_t big_page) const;
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
  std::unordered_map<uint64_t, uint32_t> masks_; // chunk -> resident 64 KB big pages
  std::list<uint64_t> order_;                    // chunks, oldest residency first
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> where_;
};

} // namespace faultline::host
