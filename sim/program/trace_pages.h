// With a trace of the same program, what each launch will touch: the trace's operation of the
// same number, its 64 KB pages in the trace's addresses, by 2 MB chunk. The budget then counts
// what the kernel touches, as the replay's does, not the allocations it names: a launch naming
// one tensor of a large allocator segment needs that tensor's pages, not the segment.
// The whole trace is read once at the start (a chunk list per operation: a few MB for a
// ResNet-50 of ten steps), so that a launch costs a lookup and no decoding.
#pragma once

#include "sim/host/budget.h"

#include <cstdint>
#include <string>
#include <vector>

namespace faultline::program {

class TracePages {
public:
  // TraceError for a trace that does not read.
  explicit TracePages(const std::string& trace_path);
  // Operation #index's pages (trace chunks, pages as bits); null past the trace's operations.
  const std::vector<host::ChunkPages>* operation(uint64_t index) const {
    return index < operations_.size() ? &operations_[index] : nullptr;
  }
  uint64_t operations() const { return operations_.size(); }

private:
  std::vector<std::vector<host::ChunkPages>> operations_;
};

} // namespace faultline::program
