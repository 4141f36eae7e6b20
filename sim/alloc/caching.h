// PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp), with or without
// expandable segments. Requests round up to 512 B; up to 1 MiB they go to the small pool (2 MiB
// segments), above to the large pool (20 MiB segments below 10 MiB, else the rounded size).
// Each pool finds the best fit among free blocks of the same stream, splits what is left over
// (small pool: at least 512 B; large pool: more than 1 MiB and only below max_split_size) and
// merges freed blocks with free neighbours. When the driver refuses memory it frees oversize
// cached blocks, then every cached segment, then gives up. With expandable segments each
// (pool, stream) has one large VA reservation whose pages (2 MiB small, 20 MiB large) are
// mapped on demand at the lowest address that fits, and unmapped when the cache is released.
#pragma once

#include "sim/alloc/allocator.h"

#include <map>
#include <memory>
#include <set>
#include <tuple>

namespace faultline::alloc {

class CachingAllocator : public Allocator {
public:
  CachingAllocator(const Options& options, Driver& driver, bool expandable);
  ~CachingAllocator() override;
  Block malloc(Bytes size, uint64_t stream) override;
  void free(Addr address) override;
  void empty_cache() override;
  void check() const override { check_with(0); }
  // check() for an allocator that shares its driver: `elsewhere` is what the others reserved.
  void check_with(Bytes elsewhere) const;
  std::vector<std::pair<std::string, uint64_t>> counters() const override;
  // Whether `address` is a live block of this allocator (GMLake routes frees with it).
  bool owns(Addr address) const { return allocated_.count(address) != 0; }

private:
  struct Segment;
  struct Node {
    Addr address = 0;
    Bytes size = 0;
    uint64_t stream = 0;
    bool allocated = false;
    bool mapped = true;
    Node* prev = nullptr;
    Node* next = nullptr;
    Segment* segment = nullptr;
  };
  struct Segment {
    Addr base = 0;
    Bytes size = 0;
    bool small = false;
    Node* first = nullptr;
    Bytes page = 0;            // expandable only: physical page size
    std::vector<Handle> pages; // expandable only: the handle mapped at each page, or 0
  };
  struct BySize {
    bool operator()(const Node* a, const Node* b) const {
      return std::tie(a->stream, a->size, a->address) < std::tie(b->stream, b->size, b->address);
    }
  };
  struct ByAddress {
    bool operator()(const Node* a, const Node* b) const {
      return std::tie(a->stream, a->address) < std::tie(b->stream, b->address);
    }
  };
  struct Pool {
    bool small = false;
    std::set<Node*, BySize> free;        // free mapped blocks
    std::set<Node*, ByAddress> unmapped; // expandable: unmapped address ranges
  };

  Pool& pool_for(Bytes rounded) { return rounded <= kSmallSize ? small_ : large_; }
  Node* find_free(Pool& pool, uint64_t stream, Bytes rounded);
  Node* allocate_new(Pool& pool, uint64_t stream, Bytes rounded);
  Node* new_segment(Pool& pool, uint64_t stream, Bytes rounded);
  Node* grow(Pool& pool, uint64_t stream, Bytes rounded);
  Node* find_expandable(Pool& pool, uint64_t stream, Bytes rounded);
  Node* map_node(Pool& pool, Node* node, Bytes bytes);
  bool should_split(const Pool& pool, const Node* node, Bytes rounded) const;
  void split(Pool& pool, Node* node, Bytes rounded);
  Node* merge_free(Pool& pool, Node* node);
  void absorb(Pool& pool, Node* into, Node* from);
  bool release_oversize(Pool& pool, uint64_t stream, Bytes rounded);
  void release_pool(Pool& pool);
  void release_segment(Pool& pool, Node* node);
  void unmap_pages(Pool& pool, Node* node);
  Node* cut(Node* node, Bytes at);
  void erase_segment(Segment* segment);
  void check_segment(const Segment& segment, const Pool& pool) const;
  void insert(Pool& pool, Node* node);
  void remove(Pool& pool, Node* node);

  static constexpr Bytes kSmallSize = 1 * kMiB;      // small-pool requests at most
  static constexpr Bytes kSmallBuffer = 2 * kMiB;    // small-pool segment
  static constexpr Bytes kMinLargeAlloc = 10 * kMiB; // below: a 20 MiB segment
  static constexpr Bytes kLargeBuffer = 20 * kMiB;
  static constexpr Bytes kRoundLarge = 2 * kMiB;

  Options options_;
  Driver& driver_;
  bool expandable_;
  Pool small_, large_;
  std::set<std::unique_ptr<Segment>> segments_;
  std::map<Addr, Node*> allocated_;
  uint64_t splits_ = 0, segments_created_ = 0, cache_releases_ = 0;
};

} // namespace faultline::alloc
