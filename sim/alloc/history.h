// An allocation history: what a program asked of its GPU allocator, in order. The allocator
// models (allocator.h) replay it; faultline reads it from PyTorch memory snapshots, from the
// tracer's allocator history and from the blocks of a faultline trace.
#pragma once

#include "sim/core/types.h"
#include "sim/trace/format.h"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace faultline::alloc {

struct Event {
  bool alloc = true;   // false: the block at `address` is freed
  Addr address = 0;    // the recorded allocator's address: a block's identity until its free
  Bytes size = 0;      // requested bytes (alloc); the block's size as recorded (free)
  uint64_t stream = 0; // the recorded stream handle; pools are per stream
  Time time = 0;       // ns from the history's first event
};

// What the recorded allocator itself reported, where the source holds it: the ground truth an
// allocator model is checked against.
struct Recorded {
  bool has_segments = false;   // the source recorded segment (reserved memory) events
  Bytes peak_reserved = 0;     // highest sum of live segments over the history
  Bytes peak_allocated = 0;    // highest sum of live block sizes over the history
  uint64_t segment_allocs = 0; // segment_alloc + segment_map events
  uint64_t segment_frees = 0;  // segment_free + segment_unmap events
};

struct History {
  std::string source;        // "pytorch-snapshot", "torch-history" or "faultline-trace"
  nlohmann::json metadata;   // free-form: what the source said about itself
  std::vector<Event> events; // allocs and frees in the allocator's order; every free names a
                             // live block; blocks alive at the end stay live
  uint64_t blocks_before_history = 0; // frees of blocks allocated before recording began,
                                      // turned into allocations at time 0
  Recorded recorded;
};

// The most bytes a history may hold live at once (its allocations, and apart from them the
// blocks allocated before recording began): more than any GPU's memory.
constexpr Bytes kMaxLiveBytes = trace::kMaxLiveBytes;

struct ReadOptions {
  int device = -1; // which device's trace of a snapshot; -1: the only one with events
};

// Reads a PyTorch memory snapshot (torch.cuda.memory._dump_snapshot's pickle, the same dict as
// JSON, either optionally zstd-compressed), the tracer's allocator history JSON, or a faultline
// trace (its allocator blocks), telling them apart by content. Throws TraceError naming the
// file and where in it (byte offset, JSON path or record) the first defect is, a history that
// holds more than kMaxLiveBytes live at once included.
History read_history(const std::string& path, const ReadOptions& options = {});

} // namespace faultline::alloc
