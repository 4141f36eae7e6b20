// A set of the 512 4 KB pages of one 2 MB VA block.
#pragma once

#include "sim/core/types.h"

#include <bit>
#include <cstdint>

namespace faultline {

struct PageMask {
  uint64_t words[kPagesPerBlock / 64] = {};

  static PageMask range(unsigned first, unsigned count) {
    PageMask m;
    for (unsigned p = first; p < first + count; ++p) m.set(p);
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
    for (unsigned big = 0; big < kBigPagesPerBlock; ++big) n += any_in_big_page(big) ? 1 : 0;
    return n;
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
  // Calls f(first, count) for each maximal run of consecutive pages in the set.
  template <class F> void for_each_run(F&& f) const {
    unsigned p = 0;
    while (p < kPagesPerBlock) {
      if (!test(p)) {
        ++p;
        continue;
      }
      unsigned q = p;
      while (q < kPagesPerBlock && test(q)) ++q;
      f(p, q - p);
      p = q;
    }
  }
};

} // namespace faultline
