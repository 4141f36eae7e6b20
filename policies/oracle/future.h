// The trace as the oracle needs it, read once at the start through a StepRepeater of the run's
// iterations: per kernel, the managed 2 MB blocks it touches in order of first touch, with the
// 64 KB big pages it touches in each and the span of its accesses that touch the block; per
// block, the kernels that touch it; per kernel, the pages the host touches before it.
#pragma once

#include "policies/oracle/foresight.h"
#include "sim/trace/format.h"

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace faultline::policies::oracle {

class Future final : public Foresight {
public:
  Future(const std::string& path, uint64_t iterations);

  uint64_t kernels() const override { return blocks_of_kernel_.size(); }
  const std::vector<BlockUse>& blocks(uint64_t kernel) const override {
    return blocks_of_kernel_[kernel];
  }
  const std::vector<BlockUse>& host_before(uint64_t kernel) const override;
  When next_use(uint64_t block, When now) const override;

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
