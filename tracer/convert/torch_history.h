// PyTorch's caching-allocator history as tracer/torch/sitecustomize.py writes it: tensor-level
// block allocations and frees with their wall-clock times.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace faultline::capture {

struct BlockEvent {
  bool alloc = true;
  uint64_t address = 0;
  uint64_t size = 0;
  // Placement bounds on the CUPTI clock: PyTorch stamps in whole microseconds, so an
  // allocation is placed at the earliest and a free at the latest nanosecond it can have had.
  uint64_t time = 0;
};

struct TorchHistory {
  std::string torch_version;
  std::vector<BlockEvent> events; // "alloc" and "free_completed", in the allocator's order
};

// Throws TraceError naming the file and the JSON path of the first value that is missing or
// of the wrong type.
TorchHistory read_torch_history(const std::string& path);

} // namespace faultline::capture
