#include "sim/uvm/density_prefetcher.h"

#include <bit>

namespace faultline {

PageMask grow_to_big_pages(const PageMask& faulted) {
  return faulted.whole_big_pages();
}

PageMask density_prefetch(const PageMask& resident, const PageMask& faulted,
                          const PageMask& allocated, unsigned threshold_percent) {
  const PageMask grown = grow_to_big_pages(faulted) & allocated;
  const PageMask occupied = resident | grown;
  // The tree's occupancy, counted once: level 0 holds the occupied pages of each big page,
  // level l those of each aligned run of 2^l big pages (entry i covers big pages i << l on).
  constexpr unsigned kLevels = std::countr_zero(kBigPagesPerBlock) + 1;
  unsigned count[kLevels][kBigPagesPerBlock];
  for (unsigned big = 0; big < kBigPagesPerBlock; ++big)
    count[0][big] = static_cast<unsigned>(std::popcount(occupied.big_bits(big)));
  for (unsigned l = 1; l < kLevels; ++l)
    for (unsigned i = 0; i < (kBigPagesPerBlock >> l); ++i)
      count[l][i] = count[l - 1][2 * i] + count[l - 1][2 * i + 1];
  // For each faulted leaf, the largest ancestor above the threshold, as a set of big pages.
  uint64_t region_bigs = 0;
  for (unsigned big = 0; big < kBigPagesPerBlock; ++big) {
    if (!grown.any_in_big_page(big)) continue;
    for (unsigned l = kLevels - 1; l >= 1; --l) {
      const unsigned pages = kPagesPerBigPage << l;
      if (count[l][big >> l] * 100 > threshold_percent * pages) {
        region_bigs |= ((uint64_t{1} << (1u << l)) - 1) << ((big >> l) << l);
        break;
      }
    }
  }
  PageMask region;
  for (; region_bigs; region_bigs &= region_bigs - 1)
    region |= PageMask::big_page(static_cast<unsigned>(std::countr_zero(region_bigs)));
  return region.minus(grown).minus(resident) & allocated;
}
} // namespace faultline
