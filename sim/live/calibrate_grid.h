// The benchmark grid of `faultline calibrate`: which fault points and transfer sizes a full,
// per-machine or quick calibration measures. Internal to the calibrate layer: the measuring
// (calibrate.cc) and the documents derived from a full calibration (calibrate_derive.cc) share it.
#pragma once

#include "sim/live/calibrate.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace faultline::live {

// The grid: fault benchmarks (blocks x touched 64 KB big pages per block) and transfer sizes.
// `strided_points` repeat fault points with the touches in rounds (FaultOrder::kStrided).
struct Grid {
  std::vector<std::pair<uint64_t, uint64_t>> fault_points, strided_points;
  std::vector<uint64_t> sizes, peer_sizes;
  uint64_t eviction_chunks, host_fault_blocks, prefetch_blocks, discard_blocks;
  uint64_t warm_up_chunks;
};

inline std::vector<std::pair<uint64_t, uint64_t>>
cross(const std::vector<uint64_t>& blocks, const std::vector<uint64_t>& pages_per_block) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (uint64_t b : blocks)
    for (uint64_t k : pages_per_block) out.emplace_back(b, k);
  return out;
}

inline Grid grid(const CalibrationSettings& settings) {
  if (settings.quick)
    return {
        cross({1, 4}, {1, 32}), {{4, 32}}, {64 << 10, 2 << 20, 8 << 20}, {2 << 20}, 4, 2, 4, 4, 4};
  // Per machine: the fault path at twelve points of each kind, the shapes real kernels make (one
  // page to whole blocks, one to 256 blocks, one page in each of 1024, whole blocks in rounds), a
  // subset of the full grid's; one large transfer each way; the rest as below. One point of 2 GB:
  // each from the host costs a host write of the whole allocation per repeat.
  if (!settings.from.empty()) {
    std::vector<std::pair<uint64_t, uint64_t>> points = cross({1, 16, 256}, {1, 4, 32});
    points.emplace_back(1024, 1);
    return {points, {{64, 32}, {256, 32}}, {2 << 20, 1 << 30}, {}, 128, 64, 64, 64, 4096};
  }
  // Strided: a traced kernel's threads spread over its whole range touch the pages of many blocks
  // in turn (radix sort's histogram: 513 blocks, a page of each every 512 touches), which the
  // simulator's fault batches see as one or two faults a block.
  return {cross({1, 4, 16, 64, 256, 1024}, {1, 4, 32}),
          {{64, 32}, {256, 32}, {1024, 32}, {1024, 4}},
          {64 << 10, 256 << 10, 1 << 20, 2 << 20, 32 << 20, 256 << 20, 1 << 30},
          {2 << 20, 32 << 20, 256 << 20},
          128,
          64,
          64,
          64,
          4096};
}

} // namespace faultline::live
