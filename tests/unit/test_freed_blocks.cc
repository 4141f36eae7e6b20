// policies/freed_blocks.h: what a discarding policy takes for dead. A free marks its block's
// memory, an allocation over it ends that, and a free heard after an allocation that reuses the
// memory (the simulator hears frees in stream order, allocations when the CPU makes them) never
// marks what the live block holds.
#include "policies/freed_blocks.h"

#include <catch2/catch.hpp>
#include <utility>
#include <vector>

using namespace faultline;
using policies::FreedBlocks;
using policies::Range;

namespace {

std::vector<std::pair<Addr, Addr>> freed_in(const FreedBlocks& f, Addr start, Addr end) {
  std::vector<std::pair<Addr, Addr>> out;
  f.for_each_in(start, end, [&](Addr from, Addr to) { out.emplace_back(from, to); });
  return out;
}

using Pieces = std::vector<std::pair<Addr, Addr>>;

} // namespace

TEST_CASE("freed blocks: a free marks the block, an allocation over it ends that", "[policy]") {
  FreedBlocks f;
  f.alloc(1, {1000, 500});
  f.alloc(2, {1500, 500});
  CHECK(freed_in(f, 0, 4000).empty());
  f.free(1, {1000, 500});
  CHECK(freed_in(f, 0, 4000) == Pieces{{1000, 1500}});
  CHECK(freed_in(f, 1200, 1300) == Pieces{{1200, 1300}}); // clipped to what is asked
  f.alloc(3, {1100, 100}); // the allocator hands part of it out again
  CHECK(freed_in(f, 0, 4000) == Pieces{{1000, 1100}, {1200, 1500}});
  f.free(2, {1500, 500});
  CHECK(freed_in(f, 0, 4000) == Pieces{{1000, 1100}, {1200, 1500}, {1500, 2000}});
}

TEST_CASE("freed blocks: a free heard after the allocation that reuses its memory leaves the new "
          "block's data alive",
          "[policy]") {
  FreedBlocks f;
  f.alloc(1, {1000, 1000});
  SECTION("the new block at the same address") {
    f.alloc(2, {1000, 400}); // heard first, though made after block 1's free
    f.free(1, {1000, 1000});
    CHECK(freed_in(f, 0, 4000) == Pieces{{1400, 2000}});
    f.free(2, {1000, 400});
    CHECK(freed_in(f, 0, 4000) == Pieces{{1000, 1400}, {1400, 2000}});
  }
  SECTION("new blocks inside it") {
    f.alloc(2, {1200, 100});
    f.alloc(3, {1600, 100});
    f.free(1, {1000, 1000});
    CHECK(freed_in(f, 0, 4000) == Pieces{{1000, 1200}, {1300, 1600}, {1700, 2000}});
  }
  SECTION("a segment freed whole forgets its blocks, live or freed") {
    f.free(1, {1000, 1000});
    f.alloc(2, {1000, 300});
    f.forget({0, 4000});
    f.free(3, {500, 2000}); // a block of a new segment over the same addresses
    CHECK(freed_in(f, 0, 4000) == Pieces{{500, 2500}});
  }
}
