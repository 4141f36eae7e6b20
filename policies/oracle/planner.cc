#include "policies/oracle/planner.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <set>

namespace faultline::policies::oracle {
namespace {

// Free chunks kept for faults while the running kernel needs more blocks than fit (at least; the
// last batch's new blocks if more): a fault that finds the GPU full waits for the driver's
// eviction and its copy to the host.
constexpr uint64_t kMinReserve = 8;
constexpr uint64_t kNoReserveKnown = std::numeric_limits<uint64_t>::max();

// The pages from the lowest to the highest of `pages`. A copy costs the link a fixed overhead
// (about 20 us on PCIe, the time of some 900 KB), and the backend copies each run of pages
// apart: one copy of the span is cheaper than one per run, and the pages between are the
// block's too (its chunk is taken either way).
PageBits spanned(PageBits pages) {
  if (!pages) return 0;
  const unsigned lo = std::countr_zero(pages), hi = kPagesPerBlock - std::countl_zero(pages);
  return hi - lo == kPagesPerBlock ? ~PageBits{0} : ((PageBits{1} << (hi - lo)) - 1) << lo;
}

// One action per run of consecutive pages.
void push_runs(ActionKind kind, uint64_t block, PageBits pages, ProcessorId target, Actions& out) {
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

} // namespace

void Planner::start(const StartEvent& e, const Foresight& foresight) {
  future_ = &foresight;
  capacity_blocks_ = e.gpu_capacity / kBlockSize;
  gpu_index_ = e.gpu;
  gpu_ = gpu_processor(e.gpu);
  memory_ = e.memory;
}

void Planner::alloc(const AllocEvent& e) {
  if (e.block) freed_.alloc(e.id, e.range);
  if (!e.managed && !e.block) device_blocks_ += (e.range.bytes + kBlockSize - 1) / kBlockSize;
  if (e.managed && !e.block) {
    live_[e.range.start] = e.range.start + e.range.bytes;
    forget_live_pages(e.range);
    uncover(); // pages a plan left for this allocation can come now
  }
}

void Planner::free(const FreeEvent& e) {
  if (e.block && discard_freed_) freed_.free(e.id, e.range);
  if (!e.managed && !e.block) device_blocks_ -= (e.range.bytes + kBlockSize - 1) / kBlockSize;
  if (!e.managed || e.block) return;
  freed_.forget(e.range);
  live_.erase(e.range.start);
  forget_live_pages(e.range);
  for (uint64_t b = e.range.start / kBlockSize; // the backend drops a freed segment's pages
       b < (e.range.start + e.range.bytes + kBlockSize - 1) / kBlockSize; ++b)
    resident_.erase(b);
  uncover();
}

// Faulted pages are on the GPU now. While the kernel runs, the batch also tells how far it got:
// past the first touch of every block it faulted on.
void Planner::fault_batch(const FaultBatchEvent& e, Actions& out) {
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

// Pages the host touches before the next kernel leave now: a host touch of a GPU page costs a CPU
// fault, an eviction only a copy on the link.
void Planner::kernel_end(const KernelEndEvent& e, Actions& out) {
  oldest_running_ = std::max(oldest_running_, e.kernel + 1);
  running_ = false;
  for (const BlockUse& h : future_->host_before(e.kernel + 1)) {
    auto it = resident_.find(h.block);
    if (it == resident_.end() || !(it->second.pages & h.pages)) continue;
    push_runs(ActionKind::kEvict, h.block, it->second.pages & h.pages, kHost, out);
    forget(it, h.pages);
  }
}

void Planner::kernel_launch(const LaunchEvent& e, Actions& out) {
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

Planner::Held& Planner::hold(uint64_t block) {
  auto [it, fresh] = resident_.try_emplace(block);
  if (fresh) it->second.since = arrivals_++;
  return it->second;
}

// Make the GPU hold the window from `now` on: evict for what is missing, then prefetch it in
// order of need.
void Planner::plan(When now, Actions& out) {
  if (extend_plan(now, out)) return;
  planned_ = now;
  const uint64_t room = room_blocks();
  bool overflows = false, host_free = true;
  uint64_t walked = 0;
  std::vector<BlockUse>& wanted = window(now, room, overflows, walked, host_free);
  uncover();
  if (overflows && running_ && !overflowing_kernels_) return; // the driver's, as it comes
  // The kernel will fault beyond the window: leave room for it.
  reserve_ = overflows && running_ ? std::min(room / 4, std::max(kMinReserve, faulted_blocks_)) : 0;
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
    // Pages of allocations not made yet are prefetched at a later launch, once they exist (the
    // backend ignores a range outside live managed memory).
    const PageBits pages = w.pages & live_pages(w.block);
    if (!pages) continue;
    if (!resident_.count(w.block) && resident_.size() >= target) return;
    bring(w.block, pages, out);
  }
  if (walked == 0) return; // the window did not fit
  uint64_t unheld = 0;
  for (const BlockUse& w : wanted) unheld += !resident_.count(w.block);
  covered_ = {true, host_free, now.kernel, walked, future_->version(), unheld};
}

// The plan from `now` when the window up to covered_.to is held: the kernels past it are added,
// as a whole plan would add them (in order of need, the same pages), if room for them is sure
// without an eviction. False: a whole plan is needed.
bool Planner::extend_plan(When now, Actions& out) {
  if (!extend_ || !covered_.valid || !covered_.host_free ||
      covered_.version != future_->version() || now.kernel < covered_.from ||
      now.kernel > covered_.to)
    return false;
  const uint64_t end = std::min(future_->kernels(), now.kernel + lookahead_);
  for (uint64_t k = std::max(covered_.to, now.kernel + 1); k < end; ++k)
    if (!future_->host_before(k).empty()) return false;
  std::vector<BlockUse>& added = scratch_.added;
  std::unordered_map<uint64_t, size_t>& slot = scratch_.slot;
  added.clear();
  slot.clear();
  uint64_t incoming = 0;
  for (uint64_t k = covered_.to; k < end; ++k)
    for (const BlockUse& use : future_->blocks(k)) {
      if ((k == now.kernel && use.last < now.access) || !use.pages) continue;
      auto [it, fresh] = slot.try_emplace(use.block, added.size());
      if (!fresh) {
        added[it->second].pages |= use.pages;
        continue;
      }
      added.push_back(use);
      incoming += !resident_.count(use.block);
    }
  const uint64_t room = room_blocks();
  if (resident_.size() + covered_.unheld + incoming > room) return false;
  planned_ = now;
  reserve_ = 0;
  for (const BlockUse& w : added) {
    const PageBits pages = w.pages & live_pages(w.block);
    if (pages)
      bring(w.block, pages, out);
    else
      covered_.unheld += !resident_.count(w.block);
  }
  covered_.from = now.kernel;
  covered_.to = std::max(covered_.to, end);
  ++plans_extended_;
  return true;
}

// Blocks the GPU has for managed data: its capacity less the device allocations'.
uint64_t Planner::room_blocks() const {
  return capacity_blocks_ > device_blocks_ ? capacity_blocks_ - device_blocks_ : 0;
}

// Prefetches the block's live `pages` it does not hold yet, a span per copy, and holds them.
void Planner::bring(uint64_t block, PageBits pages, Actions& out) {
  PageBits& have = hold(block).pages;
  const PageBits span = spanned(pages & ~have) & live_pages(block);
  push_runs(ActionKind::kPrefetch, block, span, gpu_, out);
  have |= span;
}

// The blocks the accesses from `now` on need, in order of need with the pages wanted in each, up
// to `room` blocks. Pages the host touches before a kernel are left out of that kernel's and later
// kernels' wants: they would be taken back before their use.
// `overflows`: the window ends inside now's kernel.
// (Into scratch_, whose containers keep their memory from one plan to the next.)
// `walked`: the kernel the window ended before, if it holds all their blocks (else 0);
// `host_free`: no host touch among its kernels.
std::vector<BlockUse>& Planner::window(When now, uint64_t room, bool& overflows, uint64_t& walked,
                                       bool& host_free) const {
  std::vector<BlockUse>& out = scratch_.wanted;
  std::unordered_map<uint64_t, size_t>& slot = scratch_.slot;
  std::unordered_map<uint64_t, PageBits>& host = scratch_.host; // host's pages on the way
  out.clear();
  slot.clear();
  host.clear();
  walked = 0;
  uint64_t k = now.kernel;
  for (; k < future_->kernels() && k < now.kernel + lookahead_; ++k) {
    if (k > now.kernel)
      for (const BlockUse& h : future_->host_before(k)) {
        host[h.block] |= h.pages;
        host_free = false;
      }
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
  walked = k;
  return out;
}

// The block's big pages that live managed allocations hold. Asked for every wanted block at every
// plan, so kept per block until an allocation or a free in the block changes it.
PageBits Planner::live_pages(uint64_t block) const {
  auto [it, fresh] = live_pages_.try_emplace(block);
  if (fresh) it->second = live_pages_uncached(block);
  return it->second;
}

void Planner::forget_live_pages(const Range& r) {
  for (uint64_t b = r.start / kBlockSize; b < (r.start + r.bytes + kBlockSize - 1) / kBlockSize;
       ++b)
    live_pages_.erase(b);
}

PageBits Planner::live_pages_uncached(uint64_t block) const {
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

void Planner::forget(Resident::iterator it, PageBits pages) {
  uncover();
  it->second.pages &= ~pages;
  if (!it->second.pages) resident_.erase(it);
}

// Belady's MIN: the resident blocks outside the window, farthest next use first.
void Planner::evict_for(size_t incoming, uint64_t room, const std::unordered_set<uint64_t>& keep,
                        When now, Actions& out) {
  if (resident_.size() + incoming <= room) return;
  // (next use, age, block): among blocks used equally soon (as far as the foresight can tell
  // inside a kernel) the one that came first goes first, as the driver's FIFO would choose.
  std::vector<std::tuple<When, uint64_t, uint64_t>>& victims = scratch_.victims;
  victims.clear();
  for (const auto& [b, held] : resident_)
    if (!keep.count(b)) victims.emplace_back(future_->next_use(b, now), ~held.since, b);
  const size_t need = std::min(victims.size(), resident_.size() + incoming - room);
  std::partial_sort(victims.begin(), victims.begin() + static_cast<std::ptrdiff_t>(need),
                    victims.end(), std::greater<>());
  uncover();
  for (size_t i = 0; i < need; ++i) {
    const uint64_t b = std::get<2>(victims[i]);
    evict(b, out);
    resident_.erase(b);
  }
}

// The block's pages inside freed allocator blocks are dropped first: the eviction then writes
// back only what is left.
void Planner::evict(uint64_t block, Actions& out) const {
  const Addr start = block * kBlockSize;
  freed_.for_each_in(start, start + kBlockSize, [&](Addr from, Addr to) {
    out.push_back({ActionKind::kDiscard, {from, to - from}, kHost});
  });
  out.push_back({ActionKind::kEvict, {start, kBlockSize}, kHost});
}

// The running kernel's first touch of `block`, or null. (The last entry of a block listed twice,
// as a map filled in order would keep.)
const uint32_t* Planner::first_touch(uint64_t block) const {
  auto it = std::upper_bound(first_touch_.begin(), first_touch_.end(), block,
                             [](uint64_t b, const auto& e) { return b < e.first; });
  return it != first_touch_.begin() && std::prev(it)->first == block ? &std::prev(it)->second
                                                                     : nullptr;
}

uint64_t Planner::free_blocks() const {
  return memory_ ? memory_->free_bytes(gpu_index_) / kBlockSize : kNoReserveKnown;
}

// The backend evicts on its own when the GPU is fuller than the planner believes, and a host touch
// may leave pages it did not count: when the number of chunks held differs from its books, take
// the list of blocks on the GPU from the memory view.
void Planner::sync_with_memory() {
  if (!memory_) return;
  const uint64_t free = memory_->free_bytes(gpu_index_) / kBlockSize;
  const uint64_t used = capacity_blocks_ > free ? capacity_blocks_ - free : 0;
  if (used == resident_.size() + device_blocks_) return;
  std::set<uint64_t> held;
  for (Addr a : memory_->oldest_blocks(gpu_index_, capacity_blocks_)) held.insert(a / kBlockSize);
  uncover();
  for (auto it = resident_.begin(); it != resident_.end();)
    it = held.count(it->first) ? std::next(it) : resident_.erase(it);
  for (uint64_t b : held) hold(b);
}

} // namespace faultline::policies::oracle
