#include "sim/uvm/density_prefetcher.h"

#include <array>
#include <bit>

namespace faultline {
namespace {

// The pages of a word's four big pages, for each subset of them.
constexpr std::array<uint64_t, 16> kWordOfBigPages = [] {
  std::array<uint64_t, 16> t{};
  for (unsigned subset = 0; subset < 16; ++subset)
    for (unsigned j = 0; j < 4; ++j)
      if (subset >> j & 1) t[subset] |= uint64_t{0xffff} << (16 * j);
  return t;
}();

} // namespace

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
  // For each faulted leaf, the largest ancestor above the threshold, as a set of big pages:
  // from the root down, a node above the threshold takes every faulted leaf under it that no
  // larger node took.
  uint64_t faulted_bigs = 0;
  for (unsigned big = 0; big < kBigPagesPerBlock; ++big)
    if (grown.any_in_big_page(big)) faulted_bigs |= uint64_t{1} << big;
  uint64_t region_bigs = 0;
  for (unsigned l = kLevels - 1; l >= 1 && faulted_bigs; --l) {
    const unsigned pages = kPagesPerBigPage << l, width = 1u << l;
    for (unsigned i = 0; i < (kBigPagesPerBlock >> l); ++i) {
      const uint64_t node = ((uint64_t{1} << width) - 1) << (i * width);
      if ((faulted_bigs & node) && count[l][i] * 100 > threshold_percent * pages) {
        region_bigs |= node;
        faulted_bigs &= ~node;
      }
    }
  }
  // Word by word, from a table of the four big pages a word holds: building the region one
  // big page at a time left the wide loads below waiting on narrow stores (a third of the time
  // of a fault-bound run went there).
  PageMask out;
  for (unsigned w = 0; w < kPagesPerBlock / 64; ++w)
    out.words[w] = kWordOfBigPages[(region_bigs >> (4 * w)) & 0xf] & ~grown.words[w] &
                   ~resident.words[w] & allocated.words[w];
  return out;
}
} // namespace faultline
