// oracle: an offline bound with perfect knowledge of the trace (future.h). It keeps on the GPU
// exactly the 64 KB big pages the coming accesses need, as far ahead as fit in the GPU's 2 MB
// chunks: what is missing is prefetched in order of need (the link queues it as early as it
// can), and room is made by evicting the resident blocks whose next use lies farthest in the
// future (Belady's MIN, at the level of accesses). It plans at each launch and again whenever a
// fault batch shows the running kernel has moved on, so a kernel that needs more blocks than fit
// gets its later blocks in place of those it is done with. Pages the host will touch before the
// next kernel are sent to the host at the end of a kernel, so the host takes no fault on them.
// It reads the trace itself; no online policy can know what it knows.
#include "policies/oracle/future.h"
#include "policies/registry.h"
#include "sim/config/schema.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace faultline::policies {
namespace {

using oracle::BlockUse;
using oracle::Future;
using oracle::kPagesPerBlock;
using oracle::PageBits;
using oracle::When;

// Free chunks kept for faults while the running kernel needs more blocks than fit (at least; the
// last batch's new blocks if more): a fault that finds the GPU full waits for the driver's
// eviction and its copy to the host.
constexpr uint64_t kMinReserve = 8;
constexpr uint64_t kNoReserveKnown = std::numeric_limits<uint64_t>::max();

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
    gpu_index_ = e.gpu;
    gpu_ = gpu_processor(e.gpu);
    memory_ = e.memory;
  }

  void on_alloc(const AllocEvent& e, Actions&) override {
    if (!e.managed && !e.block) device_blocks_ += (e.range.bytes + kBlockSize - 1) / kBlockSize;
    if (e.managed && !e.block) {
      live_[e.range.start] = e.range.start + e.range.bytes;
      forget_live_pages(e.range);
    }
  }

  void on_free(const FreeEvent& e, Actions&) override {
    if (!e.managed && !e.block) device_blocks_ -= (e.range.bytes + kBlockSize - 1) / kBlockSize;
    if (!e.managed || e.block) return;
    live_.erase(e.range.start);
    forget_live_pages(e.range);
    for (uint64_t b = e.range.start / kBlockSize; // the backend drops a freed segment's pages
         b < (e.range.start + e.range.bytes + kBlockSize - 1) / kBlockSize; ++b)
      resident_.erase(b);
  }

  bool observes_faults() const override { return true; }

  // Faulted pages are on the GPU now. While the kernel runs, the batch also tells how far it
  // got: past the first touch of every block it faulted on.
  void on_fault_batch(const FaultBatchEvent& e, Actions& out) override {
    uint32_t reached = 0;
    faulted_blocks_ = 0;
    for (Addr a : e.faults) {
      Held& held = hold(a / kBlockSize);
      faulted_blocks_ += held.pages == 0;
      held.pages |= PageBits{1} << (a / kBigPageSize % kPagesPerBlock);
      if (const uint32_t* first = first_touch(a / kBlockSize)) reached = std::max(reached, *first);
    }
    if (!running_ || e.gpu != gpu_index_) return;
    sync_with_memory();
    if (planned_.kernel != kernel_ || reached > planned_.access || free_blocks() < reserve_)
      plan({kernel_, std::max(reached, planned_.kernel == kernel_ ? planned_.access : 0)}, out);
  }

  // The driver evicted blocks of its own choosing: learn which.
  void on_memory_pressure(const MemoryPressureEvent&, Actions&) override { sync_with_memory(); }

  // Pages the host touches before the next kernel leave now: a host touch of a GPU page costs
  // a CPU fault, an eviction only a copy on the link.
  void on_kernel_end(const KernelEndEvent& e, Actions& out) override {
    oldest_running_ = std::max(oldest_running_, e.kernel + 1);
    running_ = false;
    for (const BlockUse& h : future_->host_before(e.kernel + 1)) {
      auto it = resident_.find(h.block);
      if (it == resident_.end() || !(it->second.pages & h.pages)) continue;
      push_runs(ActionKind::kEvict, h.block, it->second.pages & h.pages, kHost, out);
      forget(it, h.pages);
    }
  }

  void on_kernel_launch(const LaunchEvent& e, Actions& out) override {
    for (const BlockUse& h : future_->host_before(e.kernel)) { // the host took them back
      auto it = resident_.find(h.block);
      if (it != resident_.end()) forget(it, h.pages);
    }
    kernel_ = e.kernel;
    running_ = e.kernel < future_->kernels();
    first_touch_.clear();
    if (running_)
      for (const BlockUse& use : future_->blocks(e.kernel))
        first_touch_.emplace_back(use.block, use.first);
    std::stable_sort(first_touch_.begin(), first_touch_.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    sync_with_memory();
    plan({std::min(oldest_running_, e.kernel), 0}, out);
  }

private:
  // A block the oracle believes on the GPU: the pages it put there (or saw fault), and when the
  // block came, in arrivals.
  struct Held {
    PageBits pages = 0;
    uint64_t since = 0;
  };
  // Unordered: the oracle looks blocks up at every plan, and the one walk over all of them
  // (evict_for) sorts what it finds by a key that names the block.
  using Resident = std::unordered_map<uint64_t, Held>;

  Held& hold(uint64_t block) {
    auto [it, fresh] = resident_.try_emplace(block);
    if (fresh) it->second.since = arrivals_++;
    return it->second;
  }

  // Make the GPU hold the window from `now` on: evict for what is missing, then prefetch it in
  // order of need.
  void plan(When now, Actions& out) {
    planned_ = now;
    const uint64_t room = capacity_blocks_ > device_blocks_ ? capacity_blocks_ - device_blocks_ : 0;
    bool overflows = false;
    std::vector<BlockUse>& wanted = window(now, room, overflows);
    // The kernel will fault beyond the window: leave room for it.
    reserve_ =
        overflows && running_ ? std::min(room / 4, std::max(kMinReserve, faulted_blocks_)) : 0;
    const uint64_t target = room - reserve_;
    wanted.resize(std::min<size_t>(wanted.size(), target));
    std::unordered_set<uint64_t>& keep = scratch_.keep;
    keep.clear();
    size_t incoming = 0;
    for (const BlockUse& w : wanted) {
      keep.insert(w.block);
      incoming += !resident_.count(w.block);
    }
    evict_for(incoming, target, keep, now, out);
    for (const BlockUse& w : wanted) {
      // Pages of allocations not made yet are prefetched at a later launch, once they exist
      // (the backend ignores a range outside live managed memory).
      const PageBits pages = w.pages & live_pages(w.block);
      if (!pages) continue;
      auto it = resident_.find(w.block);
      if (it == resident_.end() && resident_.size() >= target) break;
      PageBits& have = hold(w.block).pages;
      const PageBits span = spanned(pages & ~have) & live_pages(w.block);
      push_runs(ActionKind::kPrefetch, w.block, span, gpu_, out);
      have |= span;
    }
  }

  // The blocks the accesses from `now` on need, in order of need with the pages wanted in each,
  // up to `room` blocks. Pages the host touches before a kernel are left out of that kernel's
  // and later kernels' wants: they would be taken back before their use.
  // `overflows`: the window ends inside now's kernel.
  // (Into scratch_, whose containers keep their memory from one plan to the next.)
  std::vector<BlockUse>& window(When now, uint64_t room, bool& overflows) const {
    std::vector<BlockUse>& out = scratch_.wanted;
    std::unordered_map<uint64_t, size_t>& slot = scratch_.slot;
    std::unordered_map<uint64_t, PageBits>& host = scratch_.host; // host's pages on the way
    out.clear();
    slot.clear();
    host.clear();
    for (uint64_t k = now.kernel; k < future_->kernels() && k < now.kernel + lookahead_; ++k) {
      if (k > now.kernel)
        for (const BlockUse& h : future_->host_before(k)) host[h.block] |= h.pages;
      for (const BlockUse& use : future_->blocks(k)) {
        if (k == now.kernel && use.last < now.access) continue; // done with it
        auto h = host.find(use.block);
        const PageBits pages = use.pages & ~(h == host.end() ? 0 : h->second);
        if (!pages) continue;
        auto it = slot.find(use.block);
        if (it != slot.end()) {
          out[it->second].pages |= pages;
          continue;
        }
        if (out.size() == room) {
          overflows = k == now.kernel;
          return out;
        }
        slot.emplace(use.block, out.size());
        out.push_back({use.block, pages, use.first, use.last});
      }
    }
    return out;
  }

  // The block's big pages that live managed allocations hold. Asked for every wanted block at
  // every plan, so kept per block until an allocation or a free in the block changes it.
  PageBits live_pages(uint64_t block) const {
    auto [it, fresh] = live_pages_.try_emplace(block);
    if (fresh) it->second = live_pages_uncached(block);
    return it->second;
  }

  void forget_live_pages(const Range& r) {
    for (uint64_t b = r.start / kBlockSize; b < (r.start + r.bytes + kBlockSize - 1) / kBlockSize;
         ++b)
      live_pages_.erase(b);
  }

  PageBits live_pages_uncached(uint64_t block) const {
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

  // The pages from the lowest to the highest of `pages`. A copy costs the link a fixed overhead
  // (about 20 us on PCIe, the time of some 900 KB), and the backend copies each run of pages
  // apart: one copy of the span is cheaper than one per run, and the pages between are the
  // block's too (its chunk is taken either way).
  static PageBits spanned(PageBits pages) {
    if (!pages) return 0;
    const unsigned lo = std::countr_zero(pages), hi = kPagesPerBlock - std::countl_zero(pages);
    return hi - lo == kPagesPerBlock ? ~PageBits{0} : ((PageBits{1} << (hi - lo)) - 1) << lo;
  }

  // One action per run of consecutive pages.
  static void push_runs(ActionKind kind, uint64_t block, PageBits pages, ProcessorId target,
                        Actions& out) {
    for (unsigned p = 0; p < kPagesPerBlock;) {
      if (!(pages >> p & 1)) {
        ++p;
        continue;
      }
      unsigned end = p;
      while (end < kPagesPerBlock && (pages >> end & 1)) ++end;
      out.push_back(
          {kind, {block * kBlockSize + p * kBigPageSize, (end - p) * kBigPageSize}, target});
      p = end;
    }
  }

  void forget(Resident::iterator it, PageBits pages) {
    it->second.pages &= ~pages;
    if (!it->second.pages) resident_.erase(it);
  }

  // Belady's MIN: the resident blocks outside the window, farthest next use first.
  void evict_for(size_t incoming, uint64_t room, const std::unordered_set<uint64_t>& keep, When now,
                 Actions& out) {
    if (resident_.size() + incoming <= room) return;
    // (next use, age, block): among blocks used equally soon (as far as the oracle can tell
    // inside a kernel) the one that came first goes first, as the driver's FIFO would choose.
    std::vector<std::tuple<When, uint64_t, uint64_t>>& victims = scratch_.victims;
    victims.clear();
    for (const auto& [b, held] : resident_)
      if (!keep.count(b)) victims.emplace_back(future_->next_use(b, now), ~held.since, b);
    const size_t need = std::min(victims.size(), resident_.size() + incoming - room);
    std::partial_sort(victims.begin(), victims.begin() + static_cast<std::ptrdiff_t>(need),
                      victims.end(), std::greater<>());
    for (size_t i = 0; i < need; ++i) {
      const uint64_t b = std::get<2>(victims[i]);
      out.push_back({ActionKind::kEvict, {b * kBlockSize, kBlockSize}, kHost});
      resident_.erase(b);
    }
  }

  // The running kernel's first touch of `block`, or null. (The last entry of a block listed
  // twice, as a map filled in order would keep.)
  const uint32_t* first_touch(uint64_t block) const {
    auto it = std::upper_bound(first_touch_.begin(), first_touch_.end(), block,
                               [](uint64_t b, const auto& e) { return b < e.first; });
    return it != first_touch_.begin() && std::prev(it)->first == block ? &std::prev(it)->second
                                                                       : nullptr;
  }

  uint64_t free_blocks() const {
    return memory_ ? memory_->free_bytes(gpu_index_) / kBlockSize : kNoReserveKnown;
  }

  // The backend evicts on its own when the GPU is fuller than the oracle believes, and a host
  // touch may leave pages the oracle did not count: when the number of chunks held differs from
  // the oracle's books, take the list of blocks on the GPU from the memory view.
  void sync_with_memory() {
    if (!memory_) return;
    const uint64_t free = memory_->free_bytes(gpu_index_) / kBlockSize;
    const uint64_t used = capacity_blocks_ > free ? capacity_blocks_ - free : 0;
    if (used == resident_.size() + device_blocks_) return;
    std::set<uint64_t> held;
    for (Addr a : memory_->oldest_blocks(gpu_index_, capacity_blocks_)) held.insert(a / kBlockSize);
    for (auto it = resident_.begin(); it != resident_.end();)
      it = held.count(it->first) ? std::next(it) : resident_.erase(it);
    for (uint64_t b : held) hold(b);
  }

  uint64_t lookahead_;
  std::unique_ptr<Future> future_;
  const MemoryView* memory_ = nullptr;
  uint64_t capacity_blocks_ = 0, device_blocks_ = 0, oldest_running_ = 0;
  unsigned gpu_index_ = 0;
  ProcessorId gpu_ = gpu_processor(0);
  bool running_ = false;
  uint64_t faulted_blocks_ = 0; // blocks the last fault batch brought that the oracle had not
  uint64_t kernel_ = 0;         // the kernel launched last
  When planned_;                // where the last plan began
  // The running kernel's blocks and their first touch, by block (a vector, refilled at each
  // launch without allocating).
  std::vector<std::pair<uint64_t, uint32_t>> first_touch_;
  // reserve_: free blocks the last plan left for faults
  uint64_t arrivals_ = 0, reserve_ = 0;
  Resident resident_;         // blocks the oracle believes on the GPU, and their pages
  std::map<Addr, Addr> live_; // live managed allocations: start -> end
  mutable std::unordered_map<uint64_t, PageBits> live_pages_; // live_pages() of blocks asked
  // A plan's working sets, kept between plans for their memory.
  mutable struct {
    std::vector<BlockUse> wanted;
    std::unordered_map<uint64_t, size_t> slot;
    std::unordered_map<uint64_t, PageBits> host;
    std::unordered_set<uint64_t> keep;
    std::vector<std::tuple<When, uint64_t, uint64_t>> victims;
  } scratch_;
};

} // namespace

FAULTLINE_REGISTER_POLICY(Oracle, "oracle");

} // namespace faultline::policies
