#include "sim/uvm/density_prefetcher.h"

#include <catch2/catch.hpp>

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
