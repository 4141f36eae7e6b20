// With a trace of the same program, what the trace says of each operation, by number: the 64 KB
// pages it touched (trace addresses, by 2 MB chunk), the allocations its arguments named (trace
// ids, allocator blocks among them) and the allocator blocks made and freed since the operation
// before. The budget then counts what the kernel touches, as the replay's does, not the
// allocations it names (a launch naming one tensor of a large allocator segment needs that
// tensor's pages, not the segment); and the policy hears the launch as it hears it in `sim` and
// `replay`, with the blocks that PyTorch's allocator hands out inside its segments, which the
// program's own calls never show. The host's touches of managed memory since the operation
// before are there too: the driver moves the pages the host touches back to it, so the books
// let them go, as the simulator's GPU does. Each operation's name lets the run check that the
// program runs the trace's operations.
// The whole trace is read once at the start (a few MB for a ResNet-50 of ten steps), so that a
// launch costs a lookup and no decoding.
#pragma once

#include "sim/host/budget.h"
#include "sim/trace/format.h"

#include <cstdint>
#include <string>
#include <vector>

namespace faultline::program {

class TraceView {
public:
  // An allocator block made (the record) or freed (free: the record's id alone).
  struct BlockEvent {
    bool free = false;
    trace::AllocRecord record;
  };
  struct HostTouch {
    Addr address = 0; // trace address
    Bytes bytes = 0;
  };
  struct Operation {
    std::string name; // as the trace names it: demangled, or "[memcpy HtoD]", ...
    std::vector<host::ChunkPages> pages;
    std::vector<uint64_t> args;
    std::vector<BlockEvent> blocks_before;
    std::vector<HostTouch> host_before;
  };

  // TraceError for a trace that does not read.
  explicit TraceView(const std::string& trace_path);
  // Operation #index; null past the trace's operations.
  const Operation* operation(uint64_t index) const {
    return index < operations_.size() ? &operations_[index] : nullptr;
  }
  uint64_t operations() const { return operations_.size(); }

private:
  std::vector<Operation> operations_;
};

} // namespace faultline::program
