// What a planner (planner.h) knows of the kernels to come: per kernel, the managed 2 MB blocks it
// touches in order of first touch, with the 64 KB big pages it touches in each and the span of its
// accesses that touch the block; the pages the host touches before it; each block's next use.
// The oracle's Future reads it from the trace (an offline bound); policies/schedule learns it from
// the steps it has seen (online).
#pragma once

#include "sim/core/types.h"

#include <cstdint>
#include <limits>
#include <vector>

namespace faultline::policies::oracle {

constexpr unsigned kPagesPerBlock = kBlockSize / kBigPageSize; // 32: a block's pages fit a mask
using PageBits = uint32_t;
static_assert(kPagesPerBlock == 32);

// A point in the run: the kernel (its index in the trace, LaunchEvent::kernel) and the index of an
// access in it. Kernels run in trace order, so points order as the accesses do.
struct When {
  uint64_t kernel = 0;
  uint32_t access = 0;
  auto operator<=>(const When&) const = default;
};
constexpr When kNever{std::numeric_limits<uint64_t>::max(), 0};

struct BlockUse {
  uint64_t block = 0;
  PageBits pages = 0; // the big pages of the block the kernel (or the host) touches
  uint32_t first = 0; // index of the kernel's first access to the block
  uint32_t last = 0;  // and of its last
};

class Foresight {
public:
  virtual ~Foresight() = default;
  // Kernel indices at or past this one are never launched (the run ends there).
  virtual uint64_t kernels() const = 0;
  // The kernel's blocks in order of first touch (none known: empty).
  virtual const std::vector<BlockUse>& blocks(uint64_t kernel) const = 0;
  // The pages the host touches after kernel - 1 and before `kernel` (none known: empty).
  virtual const std::vector<BlockUse>& host_before(uint64_t kernel) const = 0;
  // The first access to `block` at or after `now`: in now's kernel if that kernel still has one
  // to come (the point itself when the block is in use there), else the first touching kernel
  // after it. kNever if none is known.
  virtual When next_use(uint64_t block, When now) const = 0;
  // Changes whenever an answer of blocks() or host_before() for a kernel may have changed (a
  // foresight that never changes keeps 0): a planner may keep what it planned while it holds.
  virtual uint64_t version() const { return 0; }
};

} // namespace faultline::policies::oracle
