#include "sim/uvm/density_prefetcher.h"

#include <catch2/catch.hpp>
#include <random>
#include <utility>
#include <vector>

using namespace faultline;

namespace {
const PageMask kAll = PageMask::range(0, kPagesPerBlock);
}

TEST_CASE("a lone fault migrates its 64 KB big page and nothing more", "[density]") {
  PageMask fault;
  fault.set(37); // inside big page 2
  CHECK(grow_to_big_pages(fault) == PageMask::big_page(2));
  CHECK(density_prefetch({}, fault, kAll, 51).none());
}

TEST_CASE("a region more than 51% occupied is prefetched whole", "[density]") {
  // Big pages 0..8 resident (9 of the 16 in the first 1 MB); a fault in big page 9 makes 10/16.
  PageMask resident = PageMask::range(0, 9 * kPagesPerBigPage);
  PageMask fault = PageMask::big_page(9);
  const PageMask extra = density_prefetch(resident, fault, kAll, 51);
  CHECK(extra == PageMask::range(10 * kPagesPerBigPage, 6 * kPagesPerBigPage));
}

TEST_CASE("exactly half occupied is not more than 51%", "[density]") {
  // Big page 0 resident, fault in 1: the 128 KB node is full, the 256 KB node is 50%.
  PageMask resident = PageMask::big_page(0);
  const PageMask extra = density_prefetch(resident, PageMask::big_page(1), kAll, 51);
  CHECK(extra.none());
  // With one more resident big page the 256 KB node is 75% occupied and is taken whole.
  resident |= PageMask::big_page(2);
  CHECK(density_prefetch(resident, PageMask::big_page(1), kAll, 51) == PageMask::big_page(3));
}

TEST_CASE("the largest qualifying ancestor wins, up to the whole 2 MB block", "[density]") {
  PageMask resident = PageMask::range(0, 20 * kPagesPerBigPage); // 20 of 32 big pages
  const PageMask extra = density_prefetch(resident, PageMask::big_page(31), kAll, 51);
  CHECK(extra == PageMask::range(20 * kPagesPerBigPage, 11 * kPagesPerBigPage));
  CHECK(density_prefetch(resident, PageMask::big_page(31), kAll, 100).none());
}

TEST_CASE("prefetch never returns unallocated pages", "[density]") {
  const PageMask allocated = PageMask::range(0, 256); // the first 1 MB only
  const PageMask resident = PageMask::range(0, 200);
  const PageMask extra = density_prefetch(resident, PageMask::big_page(13), allocated, 51);
  CHECK(extra.minus(allocated).none());
  // The 1 MB node is 84% occupied: everything allocated there that is missing comes along.
  CHECK(extra == (PageMask::range(200, 8) | PageMask::range(224, 32)));
}

namespace {

// The definitions written plainly, page by page and region by region: what the word-at-a-time
// range() and the counted tree must agree with.
PageMask reference_range(unsigned first, unsigned count) {
  PageMask m;
  for (unsigned p = first; p < first + count; ++p) m.set(p);
  return m;
}

PageMask reference_density(const PageMask& resident, const PageMask& faulted,
                           const PageMask& allocated, unsigned threshold_percent) {
  const PageMask grown = grow_to_big_pages(faulted) & allocated;
  const PageMask occupied = resident | grown;
  PageMask region;
  for (unsigned big = 0; big < kBigPagesPerBlock; ++big) {
    if (!grown.any_in_big_page(big)) continue;
    unsigned best_first = 0, best_size = 0;
    for (unsigned size = kPagesPerBigPage * 2; size <= kPagesPerBlock; size *= 2) {
      const unsigned first = (big * kPagesPerBigPage) / size * size;
      unsigned n = 0;
      for (unsigned p = first; p < first + size; ++p) n += occupied.test(p) ? 1 : 0;
      if (n * 100 > threshold_percent * size) best_first = first, best_size = size;
    }
    if (best_size) region |= reference_range(best_first, best_size);
  }
  return region.minus(grown).minus(resident) & allocated;
}

// Random pages in clusters, as faults and residency come: runs of a random length.
PageMask random_mask(std::mt19937_64& rng, unsigned runs) {
  PageMask m;
  for (unsigned r = 0; r < runs; ++r) {
    const unsigned first = static_cast<unsigned>(rng() % kPagesPerBlock);
    const unsigned count = static_cast<unsigned>(rng() % (kPagesPerBlock - first + 1));
    m |= reference_range(first, count % 97);
  }
  return m;
}

} // namespace

TEST_CASE("range() sets exactly the pages of the range, at every start and length", "[density]") {
  for (unsigned first = 0; first <= kPagesPerBlock; ++first)
    for (unsigned count = 0; first + count <= kPagesPerBlock; ++count)
      REQUIRE(PageMask::range(first, count) == reference_range(first, count));
}

TEST_CASE("the density prefetch agrees with its definition on random blocks", "[density]") {
  std::mt19937_64 rng(2311);
  for (int i = 0; i < 20000; ++i) {
    const PageMask resident = random_mask(rng, static_cast<unsigned>(rng() % 12));
    const PageMask faulted = random_mask(rng, 1 + static_cast<unsigned>(rng() % 6));
    const PageMask allocated =
        rng() % 4 == 0 ? random_mask(rng, 4) : PageMask::range(0, kPagesPerBlock);
    const unsigned threshold = static_cast<unsigned>(rng() % 101);
    INFO("case " << i << ", threshold " << threshold);
    REQUIRE(density_prefetch(resident, faulted, allocated, threshold) ==
            reference_density(resident, faulted, allocated, threshold));
  }
}

TEST_CASE("for_each_run gives the maximal runs of a random mask, in order", "[page_mask]") {
  std::mt19937_64 rng(77);
  for (int i = 0; i < 20000; ++i) {
    PageMask m = random_mask(rng, static_cast<unsigned>(rng() % 10));
    if (i % 7 == 0) m = PageMask::range(0, kPagesPerBlock).minus(m); // long runs across words
    std::vector<std::pair<unsigned, unsigned>> expected, got;
    for (unsigned p = 0; p < kPagesPerBlock;) {
      if (!m.test(p)) {
        ++p;
        continue;
      }
      unsigned q = p;
      while (q < kPagesPerBlock && m.test(q)) ++q;
      expected.emplace_back(p, q - p);
      p = q;
    }
    m.for_each_run([&](unsigned first, unsigned count) { got.emplace_back(first, count); });
    INFO("case " << i);
    REQUIRE(got == expected);
  }
}

TEST_CASE("big pages in use, counted and grown a word at a time, as page by page", "[page_mask]") {
  std::mt19937_64 rng(5);
  for (int i = 0; i < 20000; ++i) {
    PageMask m;
    for (unsigned n = static_cast<unsigned>(rng() % 40); n > 0; --n)
      m.set(static_cast<unsigned>(rng() % kPagesPerBlock));
    if (i % 5 == 0) m = random_mask(rng, 3);
    PageMask grown;
    unsigned count = 0;
    for (unsigned big = 0; big < kBigPagesPerBlock; ++big)
      if (m.big_bits(big)) grown |= PageMask::big_page(big), ++count;
    INFO("case " << i);
    REQUIRE(m.big_page_count() == count);
    REQUIRE(grow_to_big_pages(m) == grown);
  }
}
