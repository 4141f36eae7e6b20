// The trace's addresses for a run's allocations, so that a policy fed a trace of the same
// program (the oracle) plans in the trace's addresses while the run acts on its own. The run's
// n-th segment (managed or device allocation; allocator blocks are not the run's) is the trace's
// n-th, and must have its kind and size: a program that allocates otherwise is not the one
// captured, and the run stops with an Error naming both.
#pragma once

#include "sim/core/types.h"
#include "sim/host/budget.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace faultline::program {

class AddressMap {
public:
  static constexpr Addr kNoAddress = ~Addr{0};

  // Reads the trace's segments in record order; TraceError for a trace that does not read.
  explicit AddressMap(const std::string& trace_path);
  // Built from segments ((address, size), managed) in allocation order, for tests.
  using Segments = std::vector<std::pair<std::pair<Addr, Bytes>, bool>>;
  explicit AddressMap(const Segments& segments);

  // The run allocated `live`: its trace address, or kNoAddress once the trace has no more
  // segments (the run has gone past what was captured).
  Addr allocated(Addr live, Bytes size, bool managed);
  void freed(Addr live);
  Addr to_trace(Addr live) const;
  // The trace's pages as the run's: each chunk's pages moved by its segment's offset (whole when
  // the segment holds the chunk's pages and both segments lie alike on 2 MB, else page by page);
  // pages in no mapped segment are left out. Appends to `out`.
  void to_live(const std::vector<host::ChunkPages>& trace,
               std::vector<host::ChunkPages>& out) const;
  // For each piece of the trace's [start, start + bytes) in a live mapped segment:
  // f(live address, bytes).
  template <typename F> void for_each_live(Addr start, Bytes bytes, F f) const;
  uint64_t beyond_trace() const { return beyond_; }

private:
  struct Segment {
    Addr address;
    Bytes size;
    bool managed;
  };
  std::vector<Segment> trace_;
  size_t next_ = 0;
  uint64_t beyond_ = 0;
  std::map<Addr, std::pair<Bytes, Addr>> by_live_;  // live -> (size, trace)
  std::map<Addr, std::pair<Bytes, Addr>> by_trace_; // trace -> (size, live)
};

template <typename F> void AddressMap::for_each_live(Addr start, Bytes bytes, F f) const {
  auto it = by_trace_.upper_bound(start);
  if (it != by_trace_.begin()) --it;
  for (; it != by_trace_.end() && it->first < start + bytes; ++it) {
    const Addr lo = std::max(start, it->first);
    const Addr hi = std::min(start + bytes, it->first + it->second.first);
    if (lo < hi) f(it->second.second + (lo - it->first), hi - lo);
  }
}

} // namespace faultline::program
