// GMLake's stitching (sim/alloc/gmlake.h; GMLake, ASPLOS '24, as glake @ 0274a9c implements
// it): hand-built alloc/free sequences whose outcomes follow from its rules.
#include "alloc_support.h"
#include "sim/core/error.h"

#include <catch2/catch.hpp>

using namespace faultline;
using namespace faultline::alloc;
using namespace faultline::alloc::testing;
using Catch::Matchers::Contains;
using nlohmann::json;

// ---------------------------------------------------------------------------------------------
// GMLake

TEST_CASE("alloc gmlake: requests over 1 MiB round up to 2 MiB chunks", "[alloc]") {
  Harness h("gmlake");
  const Block a = h.malloc(3 * MiB);
  CHECK(a.size == 4 * MiB);
  CHECK(h.reserved() == 20 * MiB); // a 20 MiB segment, as PyTorch's below 10 MiB
  CHECK(h.calls().reserve == 1);
  CHECK(h.calls().create == 10);
  CHECK(h.calls().map == 10);
  CHECK(h.calls().malloc == 0);
  const Block b = h.malloc(1 * MiB + 1);
  CHECK(b.address == a.address + 4 * MiB);
  CHECK(b.size == 2 * MiB);
  // 1 MiB is the small pool's: PyTorch's cudaMalloc'd 2 MiB segment.
  const Block c = h.malloc(1 * MiB);
  CHECK(c.size == 1 * MiB);
  CHECK(h.calls().malloc == 1);
  CHECK(h.reserved() == 22 * MiB);
  // 12 MiB + 1 B is 7 chunks: the 7 free chunks left of the first segment.
  const Block d = h.malloc(12 * MiB + 1);
  CHECK(d.address == a.address + 6 * MiB);
  CHECK(d.size == 14 * MiB);
  CHECK(h.reserved() == 22 * MiB);
  // 14 MiB more: a segment of exactly 7 chunks.
  const Block e = h.malloc(14 * MiB);
  CHECK(e.size == 14 * MiB);
  CHECK(h.reserved() == 36 * MiB);
  CHECK(h.counter("segments_created") == 2);
}

TEST_CASE("alloc gmlake: the sliver case needs a new segment without stitching", "[alloc]") {
  SECTION("caching") {
    Harness h("caching");
    sliver(h);
    const Block x = h.malloc(26 * MiB);
    CHECK(x.size == 26 * MiB);
    CHECK(h.reserved() == 66 * MiB);
    CHECK(h.calls().malloc == 2);
  }
  SECTION("expandable: the free block before the unmapped tail grows by a page") {
    Harness h("expandable");
    Block first;
    sliver(h, &first);
    const Block x = h.malloc(26 * MiB);
    CHECK(x.address == first.address + 24 * MiB);
    CHECK(h.reserved() == 60 * MiB);
  }
  SECTION("gmlake below frag_limit (default 512 MiB)") {
    Harness h("gmlake");
    sliver(h);
    const Block x = h.malloc(26 * MiB);
    CHECK(x.size == 26 * MiB);
    CHECK(h.reserved() == 66 * MiB);
    CHECK(h.counter("stitches") == 0);
  }
  SECTION("gmlake with a request just below frag_limit") {
    Options o;
    o.frag_limit = 28 * MiB;
    Harness h("gmlake", o);
    sliver(h);
    h.malloc(26 * MiB);
    CHECK(h.reserved() == 66 * MiB);
    CHECK(h.counter("stitches") == 0);
  }
}

TEST_CASE("alloc gmlake: the sliver case stitches two free runs into one block", "[alloc]") {
  Harness h("gmlake", stitching_options());
  Block a;
  const Block b = sliver(h, &a);
  const DriverCalls before = h.calls();
  const Block s = h.malloc(26 * MiB); // 13 chunks; the free runs hold 8 and 6
  REQUIRE(s.address != 0);
  CHECK(s.size == 26 * MiB);
  CHECK(h.reserved() == 40 * MiB); // no new physical memory
  CHECK(h.counter("stitches") == 1);
  CHECK(h.calls().reserve == before.reserve + 1);
  CHECK(h.calls().map == before.map + 13);
  CHECK(h.calls().create == before.create);
  // Largest run first: the 16 MiB run (chunks 12..19), then 10 MiB of the 12 MiB run.
  const auto head = h.driver.translate(s.address, 16 * MiB);
  const auto tail = h.driver.translate(s.address + 16 * MiB, 10 * MiB);
  REQUIRE(head.size() == 1);
  REQUIRE(tail.size() == 1);
  CHECK(head[0].physical == h.driver.translate(a.address + 24 * MiB, 16 * MiB).at(0).physical);
  CHECK(tail[0].physical == h.driver.translate(a.address, 10 * MiB).at(0).physical);
  CHECK(physically_disjoint(h.driver, s, b));
  // The one chunk left (chunk 5) goes to the next 2 MiB request, shared with nobody live.
  const Block x = h.malloc(2 * MiB);
  CHECK(x.address == a.address + 10 * MiB);
  CHECK(physically_disjoint(h.driver, x, s));
  CHECK(physically_disjoint(h.driver, x, b));
  CHECK(h.reserved() == 40 * MiB);
  // Everything is in use now: another chunk needs a new segment.
  const Block y = h.malloc(2 * MiB);
  CHECK(h.reserved() == 60 * MiB);
  for (const Block& other : {s, b, x}) CHECK(physically_disjoint(h.driver, y, other));

  // Freed, the stitched block serves the same request again from the stitched pool.
  h.free(x);
  h.free(s);
  const DriverCalls cached = h.calls();
  const Block r = h.malloc(26 * MiB);
  CHECK(r.address == s.address);
  CHECK(r.size == 26 * MiB);
  CHECK(h.counter("stitch_reuses") == 1);
  CHECK(h.counter("stitches") == 1);
  CHECK(h.calls().reserve == cached.reserve);
  CHECK(h.calls().map == cached.map);

  // Everything freed and the cache emptied: nothing is left reserved or mapped.
  h.free(r);
  h.free(b);
  h.free(y);
  h.empty_cache();
  CHECK(h.reserved() == 0);
  CHECK(h.calls().unmap == h.calls().map);
  CHECK(h.calls().release == h.calls().create);
  CHECK(h.calls().unreserve == h.calls().reserve);
  CHECK(h.counter("stitched_dropped") == 1);
}

TEST_CASE("alloc gmlake: a stitched block is reused for a smaller request within reuse_limit",
          "[alloc]") {
  for (const uint64_t reuse_limit : {uint64_t{10}, uint64_t{1}}) {
    INFO("reuse_limit " << reuse_limit);
    Options o = stitching_options();
    o.reuse_limit = reuse_limit;
    Harness h("gmlake", o);
    const Block b = sliver(h);
    const Block s = h.malloc(26 * MiB); // 13 chunks
    h.free(s);
    const Block r = h.malloc(20 * MiB); // 10 chunks: 13 <= 10 * 10, but not <= 10 * 1
    REQUIRE(r.address != 0);
    CHECK(r.size == 20 * MiB);
    CHECK(h.reserved() == 40 * MiB);
    CHECK(physically_disjoint(h.driver, r, b));
    if (reuse_limit == 10) {
      CHECK(r.address == s.address);
      CHECK(h.counter("stitch_reuses") == 1);
      CHECK(h.counter("stitches") == 1);
    } else {
      CHECK(r.address != s.address);
      CHECK(h.counter("stitch_reuses") == 0);
      CHECK(h.counter("stitches") == 2);
    }
    h.free(r);
    h.free(b);
    h.empty_cache();
    CHECK(h.reserved() == 0);
  }
}

TEST_CASE("alloc gmlake: a stitched block is not reused while another block uses its chunks",
          "[alloc]") {
  Harness h("gmlake", stitching_options());
  Block a;
  const Block b = sliver(h, &a);
  const Block s = h.malloc(26 * MiB);
  h.free(s);
  // The primitive pool comes first: 12 MiB is the 6-chunk run 0..5, which s maps too.
  const Block p = h.malloc(12 * MiB);
  CHECK(p.address == a.address);
  CHECK(physically_disjoint(h.driver, p, b));
  // 16 MiB: the 8-chunk run 12..19, the rest of s's chunks.
  const Block q = h.malloc(16 * MiB);
  CHECK(q.address == a.address + 24 * MiB);
  CHECK(h.counter("stitch_reuses") == 0);
  // 26 MiB now: no chunk is free and s is not reusable (its chunks are p's and q's): a new
  // segment.
  const Block r = h.malloc(26 * MiB);
  CHECK(r.address != s.address);
  CHECK(h.reserved() == 66 * MiB);
  for (const Block& x : {p, q, b}) CHECK(physically_disjoint(h.driver, r, x));
  CHECK(physically_disjoint(h.driver, p, q));
}

TEST_CASE("alloc gmlake: defrag_level 1 stitches only after a new segment was refused", "[alloc]") {
  Options o = stitching_options();
  o.defrag_level = 1;
  SECTION("unlimited: a new segment") {
    Harness h("gmlake", o);
    sliver(h);
    h.malloc(26 * MiB);
    CHECK(h.reserved() == 66 * MiB);
    CHECK(h.counter("stitches") == 0);
  }
  SECTION("at capacity: a stitch") {
    Harness h("gmlake", o, 40 * MiB);
    const Block b = sliver(h);
    const Block s = h.malloc(26 * MiB);
    REQUIRE(s.address != 0);
    CHECK(h.reserved() == 40 * MiB);
    CHECK(h.counter("stitches") == 1);
    CHECK(physically_disjoint(h.driver, s, b));
  }
}

// GMLake's malloc: get_free_block || stitch(time 0) || realloc_block || (release_available &&
// realloc_block) || stitch(time 1) || (release_cached_blocks && realloc_block) || stitch(time 2);
// stitch(time) runs when defragLevel <= time.
TEST_CASE("alloc gmlake: defrag_level 1 stitches before the cached segments are released",
          "[alloc]") {
  Options o = stitching_options();
  o.defrag_level = 1;
  Harness h("gmlake", o, 40 * MiB);
  const Block a = h.malloc(20 * MiB); // segment 1: 10 chunks
  const Block b = h.malloc(20 * MiB); // segment 2: 10 chunks
  h.free(b);
  const Block c = h.malloc(4 * MiB); // chunks 0..1 of segment 2
  h.free(a);                         // segment 1 is idle: 10 free chunks, segment 2 has 8
  // 15 chunks: no new segment fits; stitching the 18 free chunks does. Releasing the idle segment
  // first would leave 8 free chunks and room for 10 new ones: out of memory.
  const Block x = h.malloc(30 * MiB);
  REQUIRE(x.address != 0);
  CHECK(h.reserved() == 40 * MiB);
  CHECK(h.counter("stitches") == 1);
  CHECK(h.counter("segments_released") == 0);
  CHECK(physically_disjoint(h.driver, x, c));
}

TEST_CASE("alloc gmlake: defrag_level 2 stitches once the cache is released", "[alloc]") {
  Options o = stitching_options();
  o.defrag_level = 2;
  Harness h("gmlake", o, 40 * MiB);
  const Block x1 = h.malloc(20 * MiB);
  const Block x2 = h.malloc(20 * MiB);
  h.free(x1);
  const Block p = h.malloc(10 * MiB); // segment 1, chunks 0..4
  h.free(x2);
  const Block q = h.malloc(12 * MiB); // segment 2, chunks 0..5
  // 9 chunks: 5 free in segment 1 and 4 in segment 2, no idle segment, no room for new ones.
  const Block y = h.malloc(18 * MiB);
  REQUIRE(y.address != 0);
  CHECK(h.reserved() == 40 * MiB);
  CHECK(h.counter("stitches") == 1);
  CHECK(physically_disjoint(h.driver, y, p));
  CHECK(physically_disjoint(h.driver, y, q));
}

TEST_CASE("alloc gmlake: realloc_missing creates only the chunks the free runs lack", "[alloc]") {
  Options o = stitching_options();
  SECTION("off: a whole new segment") {
    Harness h("gmlake", o);
    sliver(h);
    h.malloc(60 * MiB);
    CHECK(h.reserved() == 100 * MiB);
    CHECK(h.counter("stitches") == 0);
  }
  SECTION("on: 16 new chunks stitched with the 14 free ones") {
    o.realloc_missing = true;
    Harness h("gmlake", o);
    const Block b = sliver(h);
    const Block s = h.malloc(60 * MiB); // 30 chunks
    REQUIRE(s.address != 0);
    CHECK(s.size == 60 * MiB);
    CHECK(h.reserved() == 72 * MiB);
    CHECK(h.counter("stitches") == 1);
    CHECK(h.counter("segments_created") == 2);
    CHECK(physically_disjoint(h.driver, s, b));
  }
}

TEST_CASE("alloc gmlake: out of memory releases idle segments, then reports failure", "[alloc]") {
  Harness h("gmlake", {}, 40 * MiB);
  const Block a = h.malloc(40 * MiB);
  h.free(a);
  // Stream 1 cannot use stream 0's free chunks; they go back to the driver.
  const Block b = h.malloc(30 * MiB, 1);
  REQUIRE(b.address != 0);
  CHECK(h.reserved() == 30 * MiB);
  CHECK(h.counter("segments_released") == 1);
  const Block c = h.malloc(20 * MiB);
  CHECK(c.address == 0);
  CHECK(h.reserved() == 30 * MiB);
  h.free(b);
  h.empty_cache();
  CHECK(h.reserved() == 0);
}

TEST_CASE("alloc: freeing an address that is not a live block throws", "[alloc]") {
  for (const std::string name : {"caching", "expandable", "gmlake"}) {
    INFO(name);
    Harness h(name);
    const Block small = h.malloc(100);
    const Block large = h.malloc(30 * MiB);
    CHECK_THROWS_AS(h.model->free(small.address + 512), SimulationError);
    CHECK_THROWS_AS(h.model->free(large.address + 2 * MiB), SimulationError);
    h.free(large);
    CHECK_THROWS_AS(h.model->free(large.address), SimulationError); // twice
    h.free(small);
  }
}
