// oracle: an offline bound with perfect knowledge of the trace. Before each launch it makes the
// GPU hold exactly the 64 KB big pages the next kernels need, as many kernels ahead as fit in the
// GPU's 2 MB chunks: what is missing is prefetched in order of need (the link queues it as early
// as it can), and room is made by evicting the resident blocks whose next use lies farthest in
// the future (Belady's MIN). It reads the trace itself; no online policy can know what it knows.
#include "policies/registry.h"
#include "sim/config/schema.h"
#include "sim/trace/step_repeater.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace faultline::policies {
namespace {

constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();

constexpr unsigned kPagesPerBlock = kBlockSize / kBigPageSize; // 32: a block's pages fit a mask
using PageBits = uint32_t;
static_assert(kPagesPerBlock == 32);

struct BlockUse {
  uint64_t block;
  PageBits pages; // the 64 KB big pages of the block the kernel touches
};

// The trace as the oracle needs it: per kernel, the managed 2 MB blocks it touches in order
// of first touch with the pages it touches in each, and per block the kernels that touch it.
struct Future {
  std::vector<std::vector<BlockUse>> blocks_of_kernel;
  std::unordered_map<uint64_t, std::vector<uint64_t>> kernels_of_block;

  // The records the backend plays: the trace run for `iterations` steps.
  Future(const std::string& path, uint64_t iterations) {
    trace::StepRepeater reader(path, iterations);
    trace::Record r;
    std::map<Addr, Addr> device; // start -> end of live device allocations
    std::unordered_map<uint64_t, Addr> device_ids;
    while (reader.next(r)) {
      if (r.type == trace::RecordType::kAlloc && r.alloc.kind == trace::MemoryKind::kDevice) {
        device[r.alloc.address] = r.alloc.address + r.alloc.size;
        device_ids[r.alloc.id] = r.alloc.address;
      } else if (r.type == trace::RecordType::kFree && device_ids.count(r.free.id)) {
        device.erase(device_ids[r.free.id]);
        device_ids.erase(r.free.id);
      } else if (r.type == trace::RecordType::kKernel) {
        add_kernel(r.kernel, device);
      }
    }
  }

  uint64_t next_use(uint64_t block, uint64_t after) const {
    auto it = kernels_of_block.find(block);
    if (it == kernels_of_block.end()) return kNever;
    auto k = std::lower_bound(it->second.begin(), it->second.end(), after);
    return k == it->second.end() ? kNever : *k;
  }

private:
  void add_kernel(const trace::KernelRecord& k, const std::map<Addr, Addr>& device) {
    const uint64_t index = blocks_of_kernel.size();
    std::vector<BlockUse> blocks;
    std::unordered_map<uint64_t, size_t> slot;
    for (const trace::Access& a : k.accesses) {
      const Addr address = a.big_page * kBigPageSize;
      auto d = device.upper_bound(address);
      if (d != device.begin() && address < std::prev(d)->second) continue; // never migrates
      const uint64_t block = address / kBlockSize;
      auto [it, fresh] = slot.emplace(block, blocks.size());
      if (fresh) {
        blocks.push_back({block, 0});
        kernels_of_block[block].push_back(index);
      }
      blocks[it->second].pages |= PageBits{1} << (a.big_page % kPagesPerBlock);
    }
    blocks_of_kernel.push_back(std::move(blocks));
  }
};

struct Params {
  uint64_t max_lookahead_kernels = 256;
};

const config::Fields<Params>& fields() {
  static const config::Fields<Params> fields = {
      config::field(&Params::max_lookahead_kernels, "max_lookahead_kernels",
                    "how many kernels ahead the window may reach")
          .unit("kernels"),
  };
  return fields;
}
FAULTLINE_REGISTER_SCHEMA("policy.oracle", "`policy.params` of policy oracle", fields);

class Oracle : public IPolicy {
public:
  Oracle(const nlohmann::json& params, const std::string& where)
      : lookahead_(
            config::read_object(params, where, "$.policy.params", fields()).max_lookahead_kernels) {
  }

  void on_start(const StartEvent& e, Actions&) override {
    future_ = std::make_unique<Future>(e.trace_path, e.iterations);
    capacity_blocks_ = e.gpu_capacity / kBlockSize;
    gpu_ = gpu_processor(e.gpu);
  }

  void on_alloc(const AllocEvent& e, Actions&) override {
    if (!e.managed && !e.block) device_blocks_ += (e.range.bytes + kBlockSize - 1) / kBlockSize;
    if (e.managed && !e.block) live_[e.range.start] = e.range.start + e.range.bytes;
  }

  void on_free(const FreeEvent& e, Actions&) override {
    if (!e.managed && !e.block) device_blocks_ -= (e.range.bytes + kBlockSize - 1) / kBlockSize;
    if (e.managed && !e.block) live_.erase(e.range.start);
    if (e.managed && !e.block) // the backend drops a freed segment's pages
      for (uint64_t b = e.range.start / kBlockSize;
           b < (e.range.start + e.range.bytes + kBlockSize - 1) / kBlockSize; ++b)
        resident_.erase(b);
  }

  bool observes_faults() const override { return true; }
  void on_fault_batch(const FaultBatchEvent& e, Actions&) override {
    for (Addr a : e.faults) resident_[a / kBlockSize] |= PageBits{1} << (a / kBigPageSize % 32);
  }

  void on_kernel_end(const KernelEndEvent& e, Actions&) override {
    oldest_running_ = std::max(oldest_running_, e.kernel + 1);
  }

  void on_kernel_launch(const LaunchEvent& e, Actions& out) override {
    const uint64_t room = capacity_blocks_ > device_blocks_ ? capacity_blocks_ - device_blocks_ : 0;
    const std::vector<BlockUse> wanted = window(std::min(oldest_running_, e.kernel), room);
    std::unordered_set<uint64_t> keep;
    size_t incoming = 0;
    for (const BlockUse& w : wanted) {
      keep.insert(w.block);
      incoming += !resident_.count(w.block);
    }
    evict_for(incoming, room, keep, e.kernel, out);
    for (const BlockUse& w : wanted) {
      // Pages of allocations not made yet are prefetched at a later launch, once they exist
      // (the backend ignores a range outside live managed memory).
      const PageBits pages = w.pages & live_pages(w.block);
      if (!pages) continue;
      auto it = resident_.find(w.block);
      if (it == resident_.end() && resident_.size() >= room) break;
      PageBits& have = resident_[w.block];
      prefetch_pages(w.block, pages & ~have, out);
      have |= pages;
    }
  }

private:
  // The blocks of kernels first.. in order of need with the pages wanted in each, up to `room`
  // blocks.
  std::vector<BlockUse> window(uint64_t first, uint64_t room) const {
    std::vector<BlockUse> out;
    std::unordered_map<uint64_t, size_t> slot;
    const auto& kernels = future_->blocks_of_kernel;
    for (uint64_t k = first; k < kernels.size() && k < first + lookahead_; ++k)
      for (const BlockUse& use : kernels[k]) {
        auto it = slot.find(use.block);
        if (it != slot.end()) {
          out[it->second].pages |= use.pages;
          continue;
        }
        if (out.size() == room) return out;
        slot.emplace(use.block, out.size());
        out.push_back(use);
      }
    return out;
  }

  // The block's big pages that live managed allocations hold.
  PageBits live_pages(uint64_t block) const {
    const Addr lo = block * kBlockSize, hi = lo + kBlockSize;
    PageBits out = 0;
    auto it = live_.upper_bound(lo);
    if (it != live_.begin()) --it;
    for (; it != live_.end() && it->first < hi; ++it) {
      const Addr a = std::max(lo, it->first), b = std::min(hi, it->second);
      for (Addr q = a; q < b; q = (q / kBigPageSize + 1) * kBigPageSize)
        out |= PageBits{1} << ((q - lo) / kBigPageSize);
    }
    return out;
  }

  // One prefetch per run of consecutive wanted pages.
  void prefetch_pages(uint64_t block, PageBits pages, Actions& out) {
    for (unsigned p = 0; p < kPagesPerBlock;) {
      if (!(pages >> p & 1)) {
        ++p;
        continue;
      }
      unsigned end = p;
      while (end < kPagesPerBlock && (pages >> end & 1)) ++end;
      out.push_back({ActionKind::kPrefetch,
                     {block * kBlockSize + p * kBigPageSize, (end - p) * kBigPageSize},
                     gpu_});
      p = end;
    }
  }

  // Belady's MIN: the resident blocks outside the window, farthest next use first.
  void evict_for(size_t incoming, uint64_t room, const std::unordered_set<uint64_t>& keep,
                 uint64_t now_kernel, Actions& out) {
    if (resident_.size() + incoming <= room) return;
    std::vector<std::pair<uint64_t, uint64_t>> victims; // (next use, block)
    for (const auto& [b, pages] : resident_)
      if (!keep.count(b)) victims.push_back({future_->next_use(b, now_kernel), b});
    std::sort(victims.begin(), victims.end(), std::greater<>());
    size_t need = resident_.size() + incoming - room;
    for (size_t i = 0; i < victims.size() && i < need; ++i) {
      out.push_back({ActionKind::kEvict, {victims[i].second * kBlockSize, kBlockSize}, kHost});
      resident_.erase(victims[i].second);
    }
  }

  uint64_t lookahead_;
  std::unique_ptr<Future> future_;
  uint64_t capacity_blocks_ = 0, device_blocks_ = 0, oldest_running_ = 0;
  ProcessorId gpu_ = gpu_processor(0);
  std::map<uint64_t, PageBits> resident_; // blocks the oracle believes on the GPU, and their pages
  std::map<Addr, Addr> live_;             // live managed allocations: start -> end
};

} // namespace

FAULTLINE_REGISTER_POLICY(Oracle, "oracle");

} // namespace faultline::policies
