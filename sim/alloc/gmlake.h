// GMLake's virtual memory stitching (ASPLOS'24; glake GMLake/src/CUDACachingAllocator.cpp).
// Requests up to 1 MiB use PyTorch's small pool unchanged. Larger ones round up to 2 MiB chunks
// of physical memory (cuMemCreate), which primitive segments map contiguously. A request is
// served, in order, by: the best-fit free run of chunks of its stream (primitive pool); a cached
// stitched block whose chunks are all free, at most reuse_limit times the request (stitched
// pool); stitching, when the request is at least frag_limit, the largest free runs into a new
// virtual range that maps their chunks (no copy, no new physical memory); a new primitive
// segment. A physical chunk may be mapped by its primitive segment and by stitched blocks at
// once, but is used by one live block at a time. Cached stitched blocks are garbage-collected
// (virtual ranges unmapped) when they exceed auto_gc bytes and before an out-of-memory retry,
// which first gives back every segment whose chunks are all free.
#pragma once

#include "sim/alloc/allocator.h"
#include "sim/alloc/caching.h"

#include <map>
#include <set>
#include <tuple>
#include <vector>

namespace faultline::alloc {

class GMLakeAllocator : public Allocator {
public:
  GMLakeAllocator(const Options& options, Driver& driver);
  Block malloc(Bytes size, uint64_t stream) override;
  void free(Addr address) override;
  void empty_cache() override;
  void check() const override;
  std::vector<std::pair<std::string, uint64_t>> counters() const override;

  static constexpr Bytes kChunk = 2 * kMiB;

private:
  struct ChunkRef {
    uint64_t segment = 0;
    size_t index = 0;
  };
  struct Chunk {
    Handle handle = 0;
    Addr user = 0;               // the live block using it, or 0
    std::set<uint64_t> stitched; // stitched blocks that map it
  };
  struct Segment {
    Addr base = 0;
    uint64_t stream = 0;
    std::vector<Chunk> chunks;
    std::map<size_t, size_t> free_runs; // first chunk -> length
  };
  struct Stitched {
    Addr base = 0;
    uint64_t stream = 0;
    std::vector<ChunkRef> chunks;
    bool live = false;
    uint64_t last_use = 0; // for least-recently-used garbage collection
  };
  struct Live {
    uint64_t stitched = 0; // 0: a primitive block
    std::vector<ChunkRef> chunks;
  };
  using Run = std::tuple<uint64_t, size_t, uint64_t, size_t>; // stream, length, segment, first

  Block serve(size_t chunks, uint64_t stream, unsigned attempt);
  Block from_primitive(size_t chunks, uint64_t stream);
  Block from_stitched_pool(size_t chunks, uint64_t stream);
  Block stitch(size_t chunks, uint64_t stream);
  Block stitch_with_new(size_t chunks, uint64_t stream);
  Block from_new_segment(size_t chunks, uint64_t stream);
  uint64_t create_segment(size_t chunks, uint64_t stream);
  bool reusable(const Stitched& s) const;
  void take(ChunkRef first, size_t count, Addr user);
  void give(ChunkRef chunk);
  Chunk& at(ChunkRef ref) { return segments_.at(ref.segment).chunks[ref.index]; }
  void collect_garbage(bool everything);
  void drop_stitched(uint64_t id);
  void release_free_segments();
  Bytes cached_stitched_bytes() const;

  Options options_;
  Driver& driver_;
  CachingAllocator small_;
  std::map<uint64_t, Segment> segments_;
  std::set<Run> runs_; // every free run of chunks, for best fit
  std::map<uint64_t, Stitched> stitched_;
  std::map<Addr, Live> live_;
  uint64_t next_id_ = 1, tick_ = 0;
  uint64_t stitches_ = 0, stitch_reuses_ = 0, garbage_collections_ = 0, stitched_dropped_ = 0;
  uint64_t segments_created_ = 0, segments_released_ = 0;
};

} // namespace faultline::alloc
