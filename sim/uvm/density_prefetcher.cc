#include "sim/uvm/density_prefetcher.h"

#include <bit>

namespace faultline {
namespace {

unsigned count_range(const PageMask& m, unsigned first, unsigned n) {
  if (n >= 64) {
    unsigned c = 0;
    for (unsigned w = first / 64; w < (first + n) / 64; ++w) c += std::popcount(m.words[w]);
    return c;
  }
  const uint64_t bits = (m.words[first / 64] >> (first % 64)) & ((uint64_t{1} << n) - 1);
  return static_cast<unsigned>(std::popcount(bits));
}

} // namespace

PageMask grow_to_big_pages(const PageMask& faulted) {
  PageMask grown;
  for (unsigned big = 0; big < kBigPagesPerBlock; ++big) {
    if (faulted.any_in_big_page(big)) grown |= PageMask::big_page(big);
  }
  return grown;
}

PageMask density_prefetch(const PageMask& resident, const PageMask& faulted,
                          const PageMask& allocated, unsigned threshold_percent) {
  const PageMask grown = grow_to_big_pages(faulted) & allocated;
  const PageMask occupied = resident | grown;
  PageMask region;
  for (unsigned big = 0; big < kBigPagesPerBlock; ++big) {
    if (!grown.any_in_big_page(big)) continue;
    unsigned best_first = 0, best_size = 0;
    for (unsigned size = kPagesPerBigPage * 2; size <= kPagesPerBlock; size *= 2) {
      const unsigned first = (big * kPagesPerBigPage) / size * size;
      if (count_range(occupied, first, size) * 100 > threshold_percent * size) {
        best_first = first;
        best_size = size;
      }
    }
    if (best_size) region |= PageMask::range(best_first, best_size);
  }
  return region.minus(grown).minus(resident) & allocated;
}

} // namespace faultline
