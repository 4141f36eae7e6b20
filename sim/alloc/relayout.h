// The link from allocator models to the unified-memory simulation: a faultline trace rewritten
// so that its allocator blocks (PyTorch tensors) sit where a model would have put them. Every
// physical allocation the model makes (a cudaMalloc segment, a 2 MiB or 20 MiB handle) becomes
// a managed segment of the new trace, every block becomes one block record per contiguous
// physical piece, and every access and kernel argument follows its block. Segments that never
// held a block (workspaces outside the allocator) are kept as they were. Simulating both traces
// under one capacity shows what a defragmenting allocator changes in oversubscription and in
// fault traffic.
#pragma once

#include "sim/alloc/replay.h"

#include <nlohmann/json.hpp>
#include <string>

namespace faultline::alloc {

struct RelayoutStats {
  uint64_t blocks = 0;
  uint64_t block_pieces = 0; // block records written (a stitched block has several)
  uint64_t accesses = 0;
  uint64_t accesses_outside = 0;       // touched no live block nor kept segment: dropped
  Bytes peak_segment_bytes_before = 0; // live segments that held blocks, at their peak
  Bytes peak_segment_bytes_after = 0;  // the model's physical memory at its peak
  ModelResult model;
};

// Throws TraceError for a defective input trace, SimulationError when the model runs out of
// the config's capacity.
RelayoutStats relayout(const std::string& in_path, const std::string& out_path,
                       const std::string& allocator, const ReplayConfig& config);
nlohmann::json to_json(const RelayoutStats& stats);

} // namespace faultline::alloc
