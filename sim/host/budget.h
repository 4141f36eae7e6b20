// The budget's rules: how GPU residency is kept within a budget when the replay, not the
// driver, evicts. The live replay (sim/live) keeps a budget on a real GPU; the simulator's
// capacity mode "budget" (sim/run/capacity.h) runs the same experiment. Both call these rules,
// each over its own books of what is resident, so that the two cannot drift apart.
#pragma once

#include "sim/core/types.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace faultline::host {

// A 2 MB chunk (address / 2 MB) and some of its 64 KB big pages, one bit each.
struct ChunkPages {
  uint64_t chunk = 0;
  uint32_t pages = 0;
};

// Big pages (address / 64 KB) grouped by chunk, chunks in order of first appearance.
std::vector<ChunkPages> group_by_chunk(const std::vector<uint64_t>& big_pages);

// What a backend knows of one GPU's residency, as the rules read it.
class ChunkBooks {
public:
  virtual ~ChunkBooks() = default;
  // The chunk's big pages on the GPU (0: none; the chunk holds no GPU memory).
  virtual uint32_t resident_pages(uint64_t chunk) const = 0;
  // Whether the chunk takes GPU memory (it may, with no page resident).
  virtual bool holds(uint64_t chunk) const = 0;
  virtual uint64_t resident_chunks() const = 0;
  // Chunks the budget leaves for managed data: the budget less device (cudaMalloc) memory.
  virtual uint64_t room_chunks() const = 0;
  // Calls f on resident chunks, next victim first (first residency first), until f says stop.
  // f may evict the chunk it is given, and no other.
  virtual void for_each_victim(const std::function<bool(uint64_t chunk)>& f) const = 0;
};

namespace budget {

// Before a kernel or a prefetched chunk: evicts resident chunks (next victim first, never one
// of `needed`) through `evict` until all of `needed` fit; the books must show each eviction.
// A victim that frees no chunk (one holding no page) does not count. Throws SimulationError,
// naming the need by `what()` (e.g. "kernel #3 (gemm)", made only then: this runs before every
// kernel), when `needed` alone is more than the room.
void make_room(const std::vector<ChunkPages>& needed, const ChunkBooks& books,
               const std::function<std::string()>& what,
               const std::function<void(uint64_t chunk)>& evict);

// Where a kernel whose pages need more chunks than the room is cut, as a driver handles a kernel
// larger than the GPU (it evicts the kernel's own early chunks to bring in the later ones): its
// touches in order (the chunk of each) split into consecutive parts of at most `room` distinct
// chunks. Returns each part's first touch; {0} when the kernel fits. Both backends run the parts
// one after another, making room before each. Throws SimulationError, naming the kernel by
// `what()`, when the room is 0. A touch whose chunk is kNoChunk (device memory, never counted
// against the budget) takes no room.
constexpr uint64_t kNoChunk = UINT64_MAX;
std::vector<size_t> parts(const std::vector<uint64_t>& chunk_of_touch, uint64_t room,
                          const std::function<std::string()>& what);

// The compute time of touches [first, end) of a kernel of `count` touches lasting `duration`:
// the kernel's time shared by touches, the rounding in the last part, so that the parts add up.
Time part_duration(Time duration, size_t first, size_t end, size_t count);

// A kernel's faults as the policy hears them at its end: its pages not on the GPU at its
// launch, by chunk in order of first touch (the order of `touched`).
std::vector<ChunkPages> absent(const std::vector<ChunkPages>& touched, const ChunkBooks& books);

} // namespace budget
} // namespace faultline::host
