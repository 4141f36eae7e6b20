// A set of the 512 4 KB pages of one 2 MB VA block.
#pragma once

#include "sim/core/types.h"

#include <bit>
#include <cstdint>

namespace faultline {

struct PageMask {
  uint64_t words[kPagesPerBlock / 64] = {};

  // Pages [first, first + count), first + count <= 512; a word at a time (the density
  // prefetcher asks for one range per faulted big page).
  static PageMask range(unsigned first, unsigned count) {
    PageMask m;
    const unsigned end = first + count;
    for (unsigned w = first / 64; w < kPagesPerBlock / 64 && w * 64 < end; ++w) {
      const unsigned lo = (first > w * 64 ? first : w * 64) - w * 64;
      const unsigned hi = (end < w * 64 + 64 ? end : w * 64 + 64) - w * 64; // 1..64
      const uint64_t below_hi = hi == 64 ? ~uint64_t{0} : (uint64_t{1} << hi) - 1;
      m.words[w] = below_hi & ~((uint64_t{1} << lo) - 1);
    }
    return m;
  }
  static PageMask big_page(unsigned big) {
    PageMask m;
    m.words[big / 4] = uint64_t{0xffff} << ((big % 4) * 16);
    return m;
  }
  void set(unsigned page) { words[page / 64] |= uint64_t{1} << (page % 64); }
  bool test(unsigned page) const { return (words[page / 64] >> (page % 64)) & 1; }
  // True when all 16 pages of big page `big` are in the set.
  bool has_big_page(unsigned big) const {
    return ((words[big / 4] >> ((big % 4) * 16)) & 0xffff) == 0xffff;
  }
  bool any_in_big_page(unsigned big) const { return big_bits(big) != 0; }
  // The 16 page bits of big page `big`.
  uint64_t big_bits(unsigned big) const { return (words[big / 4] >> ((big % 4) * 16)) & 0xffff; }
  unsigned count() const {
    unsigned n = 0;
    for (uint64_t w : words) n += std::popcount(w);
    return n;
  }
  // 64 KB big pages with at least one page set.
  unsigned big_page_count() const {
    unsigned n = 0;
    for (uint64_t w : words) n += static_cast<unsigned>(std::popcount(lanes_in_use(w)));
    return n;
  }
  // Every page of each 64 KB big page that has at least one page set.
  PageMask whole_big_pages() const {
    PageMask m;
    for (unsigned i = 0; i < kPagesPerBlock / 64; ++i) m.words[i] = lanes_in_use(words[i]) * 0xffff;
    return m;
  }
  // The lowest bit of each 16-page lane of `w` set when the lane has a page: the OR of its bits,
  // folded down by shifts that stay within the lane.
  static uint64_t lanes_in_use(uint64_t w) {
    w |= w >> 1;
    w |= w >> 2;
    w |= w >> 4;
    w |= w >> 8;
    return w & 0x0001000100010001;
  }
  bool any() const {
    for (uint64_t w : words)
      if (w) return true;
    return false;
  }
  bool none() const { return !any(); }
  PageMask& operator|=(const PageMask& o) {
    for (unsigned i = 0; i < 8; ++i) words[i] |= o.words[i];
    return *this;
  }
  PageMask& operator&=(const PageMask& o) {
    for (unsigned i = 0; i < 8; ++i) words[i] &= o.words[i];
    return *this;
  }
  PageMask minus(const PageMask& o) const {
    PageMask m;
    for (unsigned i = 0; i < 8; ++i) m.words[i] = words[i] & ~o.words[i];
    return m;
  }
  friend PageMask operator&(PageMask a, const PageMask& b) { return a &= b; }
  friend PageMask operator|(PageMask a, const PageMask& b) { return a |= b; }
  bool operator==(const PageMask& o) const {
    for (unsigned i = 0; i < 8; ++i)
      if (words[i] != o.words[i]) return false;
    return true;
  }
  // Calls f(first, count) for each maximal run of consecutive pages in the set, in order; a
  // word at a time (every copy the simulator makes goes through here).
  template <class F> void for_each_run(F&& f) const {
    unsigned p = 0;
    while (p < kPagesPerBlock) {
      const uint64_t ahead = words[p / 64] >> (p % 64);
      if (!ahead) {
        p = (p / 64 + 1) * 64;
        continue;
      }
      p += static_cast<unsigned>(std::countr_zero(ahead));
      unsigned q = p;
      while (q < kPagesPerBlock) {
        const unsigned shift = q % 64;
        // Set pages from q on in this word: the shifted-in zeros stop the count at its end.
        const auto ones = static_cast<unsigned>(std::countr_one(words[q / 64] >> shift));
        q += ones;
        if (ones < 64 - shift) break;
      }
      f(p, q - p);
      p = q;
    }
  }
};

} // namespace faultline
