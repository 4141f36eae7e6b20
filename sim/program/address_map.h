// The trace's addresses for a run's allocations, so that a policy fed a trace of the same
// program (the oracle) plans in the trace's addresses while the run acts on its own. The run's
// n-th segment (managed or device allocation; allocator blocks are not the run's) is the trace's
// n-th, and must have its kind and size: a program that allocates otherwise is not the one
// captured, and the run stops with an Error naming both.
#pragma once

#include "sim/core/types.h"

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
  // The trace's id of the segment allocated() mapped last (0 for segments built for tests).
  uint64_t last_id() const { return next_ ? trace_[next_ - 1].id : 0; }
  void freed(Addr live);
  Addr to_trace(Addr live) const;
  // For each piece of the trace's [start, start + bytes) in a live mapped segment:
  // f(live address, bytes, trace address).
  template <typename F> void for_each_live(Addr start, Bytes bytes, F f) const;
  uint64_t beyond_trace() const { return beyond_; }

private:
  struct Segment {
    Addr address;
    Bytes size;
    bool managed;
    uint64_t id = 0;
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
    if (lo < hi) f(it->second.second + (lo - it->first), hi - lo, lo);
  }
}

} // namespace faultline::program
