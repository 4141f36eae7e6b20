// The device-side page table of sanitize mode, shared by the patch (patch/pages.cu, device code)
// and the injection library (sanitize.cc, host code). Plain C layout: both sides compile it.
//
// Each 64 KB big page of a window of the address space has a 32-bit stamp: the epoch of the last
// kernel that touched it (upper 29 bits) and the access types that kernel used (lower 3 bits).
// A kernel runs under a new epoch, so no table needs clearing between kernels. When an access
// adds a type to its page's stamp, the patch appends an entry (page index | type << 29) to a
// list; the first entry of a page is its first touch. After the kernel the host reads back the
// list alone: its cost follows the pages touched, not the window.
#pragma once

#include <stdint.h>

namespace faultline::inject {

struct PageTable {
  uint64_t base;     // byte address of page 0 (64 KB aligned)
  uint64_t pages;    // pages in the window
  uint32_t* stamps;  // pages entries
  uint32_t* list;    // capacity entries
  uint32_t capacity; // entries the list holds
  uint32_t epoch;    // this launch's epoch, 1 to 2^29 - 1
  uint32_t count;    // entries appended; beyond capacity they are counted, not stored
  uint32_t outside;  // accesses outside the window
  uint32_t wgmma;    // set when the kernel issues a warpgroup MMA
  uint32_t pad;
};

constexpr uint32_t kPageShift = 16;
constexpr uint32_t kEpochShift = 3;

} // namespace faultline::inject
