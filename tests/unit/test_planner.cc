// The oracle's planner (policies/oracle/planner.h) on a foresight of random kernels: a plan that
// extends the last one (the kernels that entered the window, added) asks for what a plan that
// walks the whole window asks for, call by call, whatever the kernels, host touches, allocations
// and faults do.
#include "policies/oracle/planner.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <tuple>

using namespace faultline;
using namespace faultline::policies;
using oracle::BlockUse;
using oracle::PageBits;
using oracle::When;

namespace {

constexpr uint64_t kFirstBlock = (uint64_t{1} << 40) / kBlockSize;

class ListForesight final : public oracle::Foresight {
public:
  std::vector<std::vector<BlockUse>> kernels_, host_;
  uint64_t version_ = 0;

  uint64_t kernels() const override { return kernels_.size(); }
  const std::vector<BlockUse>& blocks(uint64_t k) const override {
    return k < kernels_.size() ? kernels_[k] : none_;
  }
  const std::vector<BlockUse>& host_before(uint64_t k) const override {
    return k < host_.size() ? host_[k] : none_;
  }
  When next_use(uint64_t block, When now) const override {
    for (uint64_t k = now.kernel; k < kernels_.size(); ++k)
      for (const BlockUse& u : kernels_[k]) {
        if (u.block != block || (k == now.kernel && u.last < now.access)) continue;
        return {k, k == now.kernel ? std::max(u.first, now.access) : u.first};
      }
    return oracle::kNever;
  }
  uint64_t version() const override { return version_; }

private:
  std::vector<BlockUse> none_;
};

std::vector<BlockUse> random_uses(std::mt19937_64& rng, uint64_t blocks) {
  std::vector<BlockUse> out;
  for (int i = 0, n = 1 + static_cast<int>(rng() % 6); i < n; ++i) {
    const uint64_t b = kFirstBlock + rng() % blocks;
    if (std::any_of(out.begin(), out.end(), [&](const BlockUse& u) { return u.block == b; }))
      continue;
    const auto first = static_cast<uint32_t>(rng() % 50);
    out.push_back(
        {b, static_cast<PageBits>(rng()) | 1u, first, first + static_cast<uint32_t>(rng() % 50)});
  }
  return out;
}

using Key = std::tuple<int, Addr, Bytes, ProcessorId>;
std::vector<Key> sorted(const Actions& actions) {
  std::vector<Key> out;
  for (const Action& a : actions)
    out.emplace_back(static_cast<int>(a.kind), a.range.start, a.range.bytes, a.target);
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace

TEST_CASE("planner: a plan extending the last asks for what a whole plan asks for (random runs)",
          "[policy]") {
  const uint64_t seed = GENERATE(1, 2, 3, 4, 5, 6);
  const uint64_t capacity = GENERATE(3, 10, 14, 18, 22, 40); // blocks: 40 holds everything
  std::mt19937_64 rng(seed);
  constexpr uint64_t kBlocks = 24, kKernels = 400;
  ListForesight future;
  for (uint64_t k = 0; k < kKernels; ++k) {
    future.kernels_.push_back(random_uses(rng, kBlocks));
    future.host_.push_back(rng() % 25 == 0
                               ? std::vector<BlockUse>{{kFirstBlock + rng() % kBlocks,
                                                        static_cast<PageBits>(rng()), 0, 0}}
                               : std::vector<BlockUse>{});
  }
  oracle::Planner whole(16, seed % 2 == 0), extending(16, seed % 2 == 0);
  whole.extend_plans(false);
  StartEvent start;
  start.gpu_capacity = capacity * kBlockSize;
  whole.start(start, future);
  extending.start(start, future);
  const auto both = [&](auto call) {
    Actions a, b;
    call(whole, a);
    call(extending, b);
    REQUIRE(sorted(a) == sorted(b));
    return a;
  };
  // Managed data: the first 20 blocks at once, the last 4 from kernel 100 on.
  const Range early{kFirstBlock * kBlockSize, 20 * kBlockSize},
      late{(kFirstBlock + 20) * kBlockSize, 4 * kBlockSize};
  both([&](oracle::Planner& p, Actions&) { p.alloc({0, 1, true, false, 0, early}); });
  std::map<uint64_t, PageBits> gpu; // what the planners' actions put on the GPU
  for (uint64_t k = 0; k < kKernels; ++k) {
    if (k == 100)
      both([&](oracle::Planner& p, Actions&) { p.alloc({0, 2, true, false, 0, late}); });
    if (k == 300) {
      both([&](oracle::Planner& p, Actions&) { p.free({0, 2, true, false, late}); });
      for (uint64_t b = kFirstBlock + 20; b < kFirstBlock + kBlocks; ++b) gpu.erase(b);
    }
    if (rng() % 40 == 0) { // the foresight learns something of a kernel ahead
      future.kernels_[std::min(kKernels - 1, k + rng() % 20)] = random_uses(rng, kBlocks);
      ++future.version_;
    }
    Actions acted = both([&](oracle::Planner& p, Actions& out) {
      p.kernel_launch({0, k, nullptr, {}}, out);
    });
    // The kernel faults on what it uses and the GPU lacks, in one batch.
    std::vector<Addr> faults;
    for (const Action& a : acted)
      for (Addr x = a.range.start; x < a.range.start + a.range.bytes; x += kBigPageSize) {
        PageBits& held = gpu[x / kBlockSize];
        const PageBits bit = PageBits{1} << (x / kBigPageSize % oracle::kPagesPerBlock);
        held = a.kind == ActionKind::kPrefetch ? held | bit : held & ~bit;
      }
    for (const BlockUse& u : future.blocks(k)) {
      const bool live = u.block < kFirstBlock + 20 || (k >= 100 && k < 300);
      const PageBits missing = u.pages & ~gpu[u.block];
      for (unsigned p = 0; live && p < oracle::kPagesPerBlock; ++p)
        if (missing >> p & 1) faults.push_back(u.block * kBlockSize + p * kBigPageSize);
      if (live) gpu[u.block] |= u.pages;
    }
    std::sort(faults.begin(), faults.end());
    if (!faults.empty())
      acted = both([&](oracle::Planner& p, Actions& out) { p.fault_batch({0, 0, faults}, out); });
    for (const Action& a : acted)
      if (a.kind == ActionKind::kEvict)
        for (Addr x = a.range.start; x < a.range.start + a.range.bytes; x += kBigPageSize)
          gpu[x / kBlockSize] &= ~(PageBits{1} << (x / kBigPageSize % oracle::kPagesPerBlock));
    both([&](oracle::Planner& p, Actions& out) { p.kernel_end({0, k}, out); });
  }
  CHECK(whole.plans_extended() == 0);
  if (capacity == 40) CHECK(extending.plans_extended() > kKernels / 4); // host touches stop it
}
