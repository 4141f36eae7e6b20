// The 2 MB chunks that allocations span, shared: several small allocations may lie in one chunk
// (the driver packs small cudaMalloc allocations into common pages). One count for a trace's
// footprint (inspect.cc), the simulator's device memory (sim/run/job.cc) and the live replay's
// (sim/live/replay.cc), so that a capacity of the footprint holds what the simulator reserves.
#pragma once

#include "sim/trace/format.h"

#include <cstdint>
#include <unordered_map>

namespace faultline::trace {

class SharedChunks {
public:
  // Adds (delta +1) or removes (-1) an allocation; returns how many chunks it took first or left
  // last. An allocation of no bytes spans no chunk.
  uint64_t add(Addr address, Bytes size, int delta) {
    uint64_t changed = 0;
    for (uint64_t c = address / kBlockSize; c * kBlockSize < address + size; ++c) {
      int& n = refs_[c];
      if (n == 0 && delta > 0) ++changed, ++live_;
      n += delta;
      if (n == 0) {
        refs_.erase(c);
        ++changed, --live_;
      }
    }
    return changed;
  }
  uint64_t live() const { return live_; }

private:
  std::unordered_map<uint64_t, int> refs_;
  uint64_t live_ = 0;
};

} // namespace faultline::trace
