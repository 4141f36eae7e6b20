// Allocator blocks the framework has freed and not handed out again, for policies that discard
// their pages instead of writing them back (the contents are dead).
//
// Contract: a free never marks memory that a live block holds. The simulator reports an
// allocator block's free when the GPU reaches it in stream order, and an allocation when the
// CPU makes it; a block the allocator handed out again over freed memory can thus be heard
// before the free of the memory it reuses, and its data must not be taken for dead.
#pragma once

#include "policies/policy.h"

#include <algorithm>
#include <map>
#include <utility>

namespace faultline::policies {

class FreedBlocks {
public:
  // An allocator block is live over `r`: the freed ranges inside it are forgotten.
  void alloc(uint64_t id, const Range& r) {
    forget(r);
    live_[r.start] = {r.start + r.bytes, id};
  }
  // An allocator block died: its range is freed, less what live blocks hold.
  void free(uint64_t id, const Range& r) {
    const Addr end = r.start + r.bytes;
    if (auto it = live_.find(r.start); it != live_.end() && it->second.second == id)
      live_.erase(it);
    Addr from = r.start;
    auto it = live_.upper_bound(r.start);
    if (it != live_.begin() && std::prev(it)->second.first > r.start) --it;
    for (; it != live_.end() && it->first < end && from < end; ++it) {
      if (it->first > from) mark(from, std::min(end, it->first));
      from = std::max(from, it->second.first);
    }
    if (from < end) mark(from, end);
  }
  // A segment freed whole (or an allocation made over freed memory): nothing is said of `r` any
  // more, freed or live.
  void forget(const Range& r) {
    erase(freed_, r);
    const Addr end = r.start + r.bytes;
    for (auto it = live_.lower_bound(r.start); it != live_.end() && it->first < end;)
      it = live_.erase(it);
  }
  // Calls f(from, to) for each freed piece of [start, end).
  template <class F> void for_each_in(Addr start, Addr end, F f) const {
    auto it = freed_.upper_bound(start);
    if (it != freed_.begin() && std::prev(it)->second > start) --it;
    for (; it != freed_.end() && it->first < end; ++it) {
      const Addr from = std::max(start, it->first), to = std::min(end, it->second);
      if (from < to) f(from, to);
    }
  }

private:
  void mark(Addr from, Addr to) {
    erase(freed_, {from, to - from});
    freed_[from] = to;
  }
  // Takes [r.start, r.start + r.bytes) out of the ranges, keeping the parts outside it.
  static void erase(std::map<Addr, Addr>& ranges, const Range& r) {
    const Addr end = r.start + r.bytes;
    auto it = ranges.upper_bound(r.start);
    if (it != ranges.begin() && std::prev(it)->second > r.start) --it;
    while (it != ranges.end() && it->first < end) {
      const auto [from, to] = *it;
      it = ranges.erase(it);
      if (from < r.start) ranges.emplace(from, r.start);
      if (to > end) it = ranges.emplace(end, to).first;
    }
  }

  std::map<Addr, Addr> freed_;                     // start -> end
  std::map<Addr, std::pair<Addr, uint64_t>> live_; // live blocks: start -> (end, id)
};

} // namespace faultline::policies
