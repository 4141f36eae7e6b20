// The trace as the oracle needs it, read once at the start through a StepRepeater of the run's
// iterations: per kernel, the managed 2 MB blocks it touches in order of first touch, with the
// 64 KB big pages it touches in each and the span of its accesses that touch the block; per
// block, the kernels that touch it; per kernel, the pages the host touches before it.
#pragma once

#include "sim/core/types.h"
#include "sim/trace/format.h"

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace faultline::policies::oracle {

constexpr unsigned kPagesPerBlock = kBlockSize / kBigPageSize; // 32: a block's pages fit a mask
using PageBits = uint32_t;
static_assert(kPagesPerBlock == 32);

// A point in the run: the kernel and the index of an access in it. Kernels run in trace order,
// so points order as the accesses do.
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

class Future {
public:
  Future(const std::string& path, uint64_t iterations);

  size_t kernels() const { return blocks_of_kernel_.size(); }
  // The kernel's blocks in order of first touch.
  const std::vector<BlockUse>& blocks(uint64_t kernel) const { return blocks_of_kernel_[kernel]; }
  // The pages the host touches after kernel - 1 and before `kernel` (none: empty).
  const std::vector<BlockUse>& host_before(uint64_t kernel) const;
  // The first access to `block` at or after `now`: in now's kernel if that kernel still has one
  // to come (the point itself when the block is in use there), else the first touching kernel
  // after it. kNever if none.
  When next_use(uint64_t block, When now) const;

private:
  struct KernelUse {
    uint64_t kernel;
    uint32_t first, last;
  };
  void add_kernel(const std::vector<trace::Access>& accesses, const std::map<Addr, Addr>& device);
  void add_host(Addr address, Bytes bytes);

  std::vector<std::vector<BlockUse>> blocks_of_kernel_;
  std::unordered_map<uint64_t, std::vector<KernelUse>> kernels_of_block_;
  // By kernel index (asked for every kernel of the window at every plan), up to the last kernel
  // with host touches before it.
  std::vector<std::vector<BlockUse>> host_before_;
};

} // namespace faultline::policies::oracle
