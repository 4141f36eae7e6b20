// PyTorch's caching allocator and its expandable segments (sim/alloc/caching.h): hand-built
// alloc/free sequences whose outcomes follow from CUDACachingAllocator.cpp and its Note
// [Expandable Segments].
#include "alloc_support.h"
#include "sim/core/error.h"

#include <catch2/catch.hpp>

using namespace faultline;
using namespace faultline::alloc;
using namespace faultline::alloc::testing;
using Catch::Matchers::Contains;
using nlohmann::json;

// ---------------------------------------------------------------------------------------------
// PyTorch's caching allocator

TEST_CASE("alloc caching: a small request takes 512 B of a 2 MiB small-pool segment", "[alloc]") {
  Harness h("caching");
  const Block a = h.malloc(100);
  CHECK(a.address != 0);
  CHECK(a.size == 512);
  CHECK(h.calls().malloc == 1);
  CHECK(h.reserved() == 2 * MiB);
  // Further small requests split the same segment.
  const Block b = h.malloc(1000);
  CHECK(b.address == a.address + 512);
  CHECK(b.size == 1024);
  const Block c = h.malloc(1 * MiB); // exactly 1 MiB is still small
  CHECK(c.address == a.address + 1536);
  CHECK(c.size == 1 * MiB);
  CHECK(h.calls().malloc == 1);
  // Just over 1 MiB goes to the large pool: a 20 MiB segment.
  const Block d = h.malloc(1 * MiB + 1);
  CHECK(d.size == 1 * MiB + 512);
  CHECK(h.calls().malloc == 2);
  CHECK(h.reserved() == 22 * MiB);
}

TEST_CASE("alloc caching: a request below 10 MiB gets a 20 MiB segment that later ones split",
          "[alloc]") {
  Harness h("caching");
  const Block a = h.malloc(5 * MiB);
  CHECK(a.size == 5 * MiB);
  CHECK(h.reserved() == 20 * MiB);
  CHECK(h.calls().malloc == 1);
  CHECK(h.counter("splits") == 1); // 5 MiB used + 15 MiB free
  const Block b = h.malloc(5 * MiB);
  CHECK(b.address == a.address + 5 * MiB);
  CHECK(b.size == 5 * MiB);
  CHECK(h.calls().malloc == 1);
  CHECK(h.reserved() == 20 * MiB);
  CHECK(h.counter("segments_created") == 1);
}

TEST_CASE("alloc caching: a request of 10 MiB or more gets a segment of its size in 2 MiB",
          "[alloc]") {
  Harness h("caching");
  const Block a = h.malloc(12 * MiB);
  CHECK(a.size == 12 * MiB);
  CHECK(h.reserved() == 12 * MiB);
  // 11 MiB + 1 B rounds to 11 MiB + 512 B, the segment to 12 MiB; the 1 MiB - 512 B left over
  // (not over 1 MiB) stay with the block.
  const Block b = h.malloc(11 * MiB + 1);
  CHECK(b.size == 12 * MiB);
  CHECK(h.reserved() == 24 * MiB);
  CHECK(h.calls().malloc == 2);
  CHECK(h.counter("splits") == 0);
}

TEST_CASE("alloc caching: the best-fitting free block serves a request, not the first", "[alloc]") {
  Harness h("caching");
  const Block b16 = h.malloc(16 * MiB);
  const Block b12 = h.malloc(12 * MiB);
  const Block b14 = h.malloc(14 * MiB);
  h.free(b16);
  h.free(b12);
  h.free(b14);
  CHECK(h.reserved() == 42 * MiB);
  // The 1 MiB left over in each case is not split off (large pool: only more than 1 MiB).
  const Block x = h.malloc(13 * MiB);
  CHECK(x.address == b14.address);
  CHECK(x.size == 14 * MiB);
  const Block y = h.malloc(11 * MiB);
  CHECK(y.address == b12.address);
  CHECK(y.size == 12 * MiB);
  const Block z = h.malloc(15 * MiB);
  CHECK(z.address == b16.address);
  CHECK(z.size == 16 * MiB);
  CHECK(h.calls().malloc == 3);
}

TEST_CASE("alloc caching: a freed block merges with its free neighbours", "[alloc]") {
  Harness h("caching");
  const Block a = h.malloc(5 * MiB);
  const Block b = h.malloc(5 * MiB);
  const Block c = h.malloc(5 * MiB); // 5 MiB of the 20 MiB segment remain free after c
  h.free(b);
  // b's 5 MiB hole and the 5 MiB tail are not adjacent: 10 MiB needs a new segment.
  const Block d = h.malloc(10 * MiB);
  CHECK(h.calls().malloc == 2);
  h.free(d);
  h.free(a);
  h.free(c);
  // a, b, c and the tail merged into the whole segment.
  const Block whole = h.malloc(20 * MiB);
  CHECK(whole.address == a.address);
  CHECK(whole.size == 20 * MiB);
  CHECK(h.calls().malloc == 2);
}

TEST_CASE("alloc caching: free blocks are reused only on their own stream", "[alloc]") {
  Harness h("caching");
  const Block a = h.malloc(5 * MiB, 1);
  h.free(a);
  const Block b = h.malloc(5 * MiB, 2);
  CHECK(b.address != a.address);
  CHECK(h.calls().malloc == 2);
  CHECK(h.reserved() == 40 * MiB);
  const Block c = h.malloc(5 * MiB, 1);
  CHECK(c.address == a.address);
  CHECK(h.calls().malloc == 2);
}

TEST_CASE("alloc caching: a large-pool remainder of at most 1 MiB is not split off", "[alloc]") {
  Harness h("caching");
  const Block seed = h.malloc(5 * MiB);
  h.free(seed); // a cached 20 MiB block
  const Block a = h.malloc(19 * MiB + 512 * 1024);
  CHECK(a.address == seed.address);
  CHECK(a.size == 20 * MiB);
  h.free(a);
  const Block b = h.malloc(19 * MiB); // exactly 1 MiB left: still not split
  CHECK(b.size == 20 * MiB);
  h.free(b);
  const Block c = h.malloc(18 * MiB + 512 * 1024); // 1.5 MiB left: split
  CHECK(c.size == 18 * MiB + 512 * 1024);
  CHECK(h.calls().malloc == 1);
  CHECK(h.counter("splits") == 2);
}

TEST_CASE("alloc caching: max_split_size keeps oversize blocks whole and for oversize requests",
          "[alloc]") {
  Options o;
  o.max_split_size = 32 * MiB;
  Harness h("caching", o);
  const Block a = h.malloc(64 * MiB);
  CHECK(a.size == 64 * MiB);
  h.free(a); // a cached oversize block
  // A request below max_split_size does not take an oversize block.
  const Block b = h.malloc(5 * MiB);
  CHECK(b.address != a.address);
  CHECK(b.size == 5 * MiB);
  CHECK(h.calls().malloc == 2);
  // An oversize request takes it when less than 20 MiB would be wasted, and does not split it.
  const Block c = h.malloc(50 * MiB);
  CHECK(c.address == a.address);
  CHECK(c.size == 64 * MiB);
  CHECK(h.calls().malloc == 2);
  h.free(c);
  // 64 MiB for 40 MiB wastes 24 MiB: a new segment.
  const Block d = h.malloc(40 * MiB);
  CHECK(d.address != a.address);
  CHECK(d.size == 40 * MiB);
  CHECK(h.calls().malloc == 3);
}

// PyTorch's release_available_cached_blocks (c10/cuda/CUDACachingAllocator.cpp), the step between
// a refused cudaMalloc and releasing the whole cache. PyTorch requires max_split_size_mb > 20.
TEST_CASE("alloc caching: out of memory first frees oversize cached segments of the stream",
          "[alloc]") {
  Options o;
  o.max_split_size = 32 * MiB;
  SECTION("the smallest segment of at least max(request, max_split_size) when there is one") {
    Harness h("caching", o, 160 * MiB);
    const Block a = h.malloc(80 * MiB);
    const Block b = h.malloc(40 * MiB);
    h.malloc(36 * MiB);
    CHECK(h.reserved() == 156 * MiB);
    h.free(a);
    h.free(b);
    // 5 MiB takes no oversize block and needs a 20 MiB segment: b's 40 MiB goes back, not a's.
    const Block x = h.malloc(5 * MiB);
    REQUIRE(x.address != 0);
    CHECK(h.calls().free == 1);
    CHECK(h.reserved() == 136 * MiB);
    CHECK(h.counter("cache_releases") == 0);
    const Block y = h.malloc(70 * MiB); // a's segment is still cached
    CHECK(y.address == a.address);
  }
  SECTION("else oversize segments from the largest down") {
    Harness h("caching", o, 160 * MiB);
    const Block a = h.malloc(36 * MiB);
    const Block b = h.malloc(34 * MiB);
    h.malloc(80 * MiB);
    h.free(a);
    h.free(b);
    const Block x = h.malloc(60 * MiB);
    REQUIRE(x.address != 0);
    CHECK(h.calls().free == 2);
    CHECK(h.reserved() == 140 * MiB);
    CHECK(h.counter("cache_releases") == 0);
  }
  SECTION("not enough oversize segments: the whole cache is released") {
    Harness h("caching", o, 100 * MiB);
    h.malloc(40 * MiB);
    const Block a = h.malloc(34 * MiB);
    const Block s = h.malloc(20 * MiB); // cached below max_split_size: only the full release
    h.free(a);
    h.free(s);
    const Block x = h.malloc(60 * MiB);
    REQUIRE(x.address != 0);
    CHECK(h.calls().free == 2);
    CHECK(h.reserved() == 100 * MiB);
    CHECK(h.counter("cache_releases") == 1);
  }
  SECTION("oversize segments of other streams wait for the full release") {
    Harness h("caching", o, 160 * MiB);
    const Block a = h.malloc(40 * MiB, 1);
    h.malloc(100 * MiB, 0);
    h.free(a);
    const Block x = h.malloc(30 * MiB, 0);
    REQUIRE(x.address != 0);
    CHECK(h.calls().free == 1);
    CHECK(h.reserved() == 130 * MiB);
    CHECK(h.counter("cache_releases") == 1);
  }
}

TEST_CASE("alloc caching: out of memory releases the cache, then reports failure", "[alloc]") {
  Harness h("caching", {}, 40 * MiB);
  const Block a = h.malloc(20 * MiB);
  const Block b = h.malloc(20 * MiB);
  CHECK(h.reserved() == 40 * MiB);
  const Block refused = h.malloc(20 * MiB);
  CHECK(refused.address == 0);
  CHECK(h.reserved() == 40 * MiB);
  CHECK(h.counter("cache_releases") == 1);

  // A cached segment of another stream cannot serve; releasing it makes room.
  h.free(a);
  const Block d = h.malloc(20 * MiB, 1);
  REQUIRE(d.address != 0);
  CHECK(h.calls().free == 1);
  CHECK(h.reserved() == 40 * MiB);

  // A request larger than any cached segment: both are released, then it fits.
  h.free(b);
  h.free(d);
  const Block e = h.malloc(30 * MiB);
  REQUIRE(e.address != 0);
  CHECK(e.size == 30 * MiB);
  CHECK(h.calls().free == 3);
  CHECK(h.reserved() == 30 * MiB);

  // Nothing cached, nothing to release: address 0.
  const Block f = h.malloc(20 * MiB);
  CHECK(f.address == 0);
  CHECK(f.size == 0);
  CHECK(h.reserved() == 30 * MiB);
  h.free(e);
  h.empty_cache();
  CHECK(h.reserved() == 0);
}

// ---------------------------------------------------------------------------------------------
// Expandable segments

TEST_CASE("alloc expandable: one segment per pool and stream, mapped in 20 MiB large pages",
          "[alloc]") {
  Harness h("expandable");
  const Block a = h.malloc(30 * MiB);
  CHECK(a.size == 30 * MiB);
  CHECK(h.reserved() == 40 * MiB); // two 20 MiB pages
  CHECK(h.calls().reserve == 1);
  CHECK(h.calls().create == 2);
  CHECK(h.calls().map == 2);
  CHECK(h.calls().malloc == 0);
  // The mapped tail serves 10 MiB without a new page.
  const Block b = h.malloc(10 * MiB);
  CHECK(b.address == a.address + 30 * MiB);
  CHECK(h.calls().map == 2);
  CHECK(h.reserved() == 40 * MiB);
  // The segment grows in place.
  const Block c = h.malloc(30 * MiB);
  CHECK(c.address == a.address + 40 * MiB);
  CHECK(h.calls().reserve == 1);
  CHECK(h.calls().map == 4);
  CHECK(h.reserved() == 80 * MiB);
  // Another stream, another segment; the small pool has its own, with 2 MiB pages.
  const Block d = h.malloc(30 * MiB, 1);
  CHECK(h.calls().reserve == 2);
  CHECK(h.reserved() == 120 * MiB);
  const Block s = h.malloc(100);
  CHECK(s.size == 512);
  CHECK(h.calls().reserve == 3);
  CHECK(h.reserved() == 122 * MiB);
  const Block t = h.malloc(100);
  CHECK(t.address == s.address + 512);
  CHECK(h.calls().reserve == 3);

  for (const Block& x : {a, b, c, d, s, t}) h.free(x);
  CHECK(h.reserved() == 122 * MiB); // cached
  h.empty_cache();
  CHECK(h.reserved() == 0);
  CHECK(h.calls().unmap == h.calls().map);
  CHECK(h.calls().release == h.calls().create);
  CHECK(h.calls().unreserve == h.calls().reserve);
}

TEST_CASE("alloc expandable: pages are mapped at the lowest address that fits", "[alloc]") {
  Harness h("expandable");
  const Block a = h.malloc(20 * MiB);
  const Block b = h.malloc(20 * MiB);
  const Block c = h.malloc(20 * MiB);
  CHECK(b.address == a.address + 20 * MiB);
  CHECK(c.address == a.address + 40 * MiB);
  h.free(b);
  h.empty_cache(); // unmaps b's page: a 20 MiB hole
  CHECK(h.reserved() == 40 * MiB);
  CHECK(h.calls().unmap == 1);
  // 30 MiB does not fit the hole: two pages after c.
  const Block d = h.malloc(30 * MiB);
  CHECK(d.address == a.address + 60 * MiB);
  CHECK(h.reserved() == 80 * MiB);
  // 20 MiB fits the hole, the lowest address (not the 10 MiB free after d plus a page).
  const Block e = h.malloc(20 * MiB);
  CHECK(e.address == a.address + 20 * MiB);
  CHECK(h.reserved() == 100 * MiB);
  CHECK(h.calls().reserve == 1);
}

TEST_CASE("alloc expandable: out of memory unmaps free pages so they can be mapped elsewhere",
          "[alloc]") {
  Harness h("expandable", {}, 60 * MiB);
  const Block a = h.malloc(20 * MiB);
  const Block b = h.malloc(20 * MiB);
  h.free(a);
  // Stream 1 needs two pages; only one is left until a's page is unmapped.
  const Block c = h.malloc(40 * MiB, 1);
  REQUIRE(c.address != 0);
  CHECK(h.reserved() == 60 * MiB);
  CHECK(h.counter("cache_releases") == 1);
  // Nothing free to unmap now.
  const Block d = h.malloc(20 * MiB);
  CHECK(d.address == 0);
  CHECK(h.reserved() == 60 * MiB);
  h.free(b);
  h.free(c);
  h.empty_cache();
  CHECK(h.reserved() == 0);
  CHECK(h.calls().unreserve == h.calls().reserve);
}
