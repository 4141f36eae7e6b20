// A LiveDevice without a GPU for the tests: allocations at made-up addresses, residency tracked
// per 64 KB big page of live address, a fault reported for each chunk a kernel finds absent. A
// kernel's touch brings the rest of its 2 MB block in (within the allocation), as the driver's
// density prefetch does for dense blocks, so the replay's books know only part of what is there.
#pragma once

#include "sim/core/types.h"
#include "sim/live/device.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <thread>
#include <vector>

namespace fltest {

using faultline::kBigPageSize;
using faultline::kBlockSize;
namespace live = faultline::live;

class FakeDevice : public live::LiveDevice {
public:
  const char* name() override { return "fake GPU"; }
  uint64_t misalign = 0;  // bytes past a 2 MB boundary where each allocation starts
  uint64_t copy_wait = 0; // what each kernel reports waiting for copies
  uint64_t last_copy_wait_ns() override { return copy_wait; }
  uint64_t free_bytes() override { return free; }
  void* alloc_managed(uint64_t bytes) override {
    next_ = (next_ + kBlockSize - 1) / kBlockSize * kBlockSize + misalign;
    const uint64_t base = next_;
    next_ += bytes;
    sizes_[base] = bytes;
    return reinterpret_cast<void*>(base);
  }
  void free_managed(void* base) override {
    const auto b = reinterpret_cast<uint64_t>(base);
    drop(b, sizes_.at(b));
    sizes_.erase(b);
  }
  void set_slot(uint32_t slot, void* base, uint64_t bytes) override {
    slots_[slot] = reinterpret_cast<uint64_t>(base);
    slot_bytes_[slot] = bytes;
  }
  bool upload_touches(const live::Touch* t, uint64_t n) override {
    touches_.assign(t, t + n);
    return true;
  }
  bool run_kernel(uint64_t first, uint64_t count, uint64_t) override {
    std::vector<uint64_t> pages;
    for (uint64_t i = first; i < first + count; ++i) {
      const uint32_t slot = touches_[i].slot_type >> 2;
      const uint64_t offset = uint64_t{touches_[i].page} * kBigPageSize;
      if (offset >= slot_bytes_.at(slot)) ++touches_past_end; // a GPU would fault on it
      const uint64_t address = slots_.at(slot) + offset;
      if (!resident_.count(address / kBlockSize)) faults_.push_back(address);
      bring_block(address);
      pages.push_back(address);
    }
    peak_chunks = std::max<uint64_t>(peak_chunks, resident_.size());
    kernel_pages.push_back(pages);
    return true;
  }
  void prefetch_to_gpu(void* p, uint64_t bytes) override {
    const auto a = reinterpret_cast<uint64_t>(p);
    prefetched.emplace_back(a, bytes);
    for_pages(a, bytes, [&](uint64_t page) {
      discarded_.erase(page);
      resident_[page / kPagesPerBlock] |= 1u << (page % kPagesPerBlock);
    });
  }
  void evict_to_host(void* p, uint64_t bytes) override {
    ++evictions_to_host;
    std::this_thread::sleep_for(evict_delay); // the CPU blocks in the call, as CUDA's does
    for_pages(reinterpret_cast<uint64_t>(p), bytes,
              [&](uint64_t page) { undone_discards += discarded_.erase(page); });
    counters_.bytes_gpu_to_host += drop(reinterpret_cast<uint64_t>(p), bytes) * kBigPageSize;
  }
  void prefetch_to_peer(void* p, uint64_t bytes) override {
    to_peer.emplace_back(reinterpret_cast<uint64_t>(p), bytes);
    drop(reinterpret_cast<uint64_t>(p), bytes);
  }
  uint64_t peer_free_bytes() override { return peer_free; }
  void discard(void* p, uint64_t bytes) override {
    for_pages(reinterpret_cast<uint64_t>(p), bytes,
              [&](uint64_t page) { discarded_.insert(page); });
    drop(reinterpret_cast<uint64_t>(p), bytes);
  }
  void advise_remote(void*, uint64_t, bool) override {}
  void host_write(void* p, uint64_t bytes) override {
    std::this_thread::sleep_for(host_write_delay); // CPU faults, on the clock
    drop(reinterpret_cast<uint64_t>(p), bytes);
  }
  void synchronize() override {}
  void quiesce() override {
    ++quiesced;
    std::this_thread::sleep_for(quiesce_delay); // a drain takes time, off the replay's clock
  }
  live::Counters counters() override { return counters_; }
  uint64_t take_faults(uint64_t* out, uint64_t max) override {
    const uint64_t n = std::min<uint64_t>(max, faults_.size());
    std::copy(faults_.begin(), faults_.begin() + static_cast<std::ptrdiff_t>(n), out);
    faults_.erase(faults_.begin(), faults_.begin() + static_cast<std::ptrdiff_t>(n));
    return n;
  }
  bool peer_copy(uint64_t, bool) override { return false; }
  const char* error() override { return ""; }

  uint64_t free = 1ull << 40, peer_free = 0;
  std::vector<std::pair<uint64_t, uint64_t>> to_peer;
  uint64_t peak_chunks = 0, quiesced = 0, evictions_to_host = 0;
  uint64_t touches_past_end = 0; // touches of a 64 KB page that starts past its allocation
  std::chrono::microseconds evict_delay{0}, quiesce_delay{0}, host_write_delay{0};
  // 64 KB big pages a prefetch to the host took back from a discard (CUDA: a prefetch undoes it).
  uint64_t undone_discards = 0;
  std::vector<std::vector<uint64_t>> kernel_pages;
  std::vector<std::pair<uint64_t, uint64_t>> prefetched;

private:
  live::Counters counters_; // bytes back: the pages an eviction found on the GPU
  template <typename F> static void for_pages(uint64_t address, uint64_t bytes, F f) {
    for (uint64_t p = address / kBigPageSize; p * kBigPageSize < address + bytes; ++p) f(p);
  }

  static constexpr uint64_t kPagesPerBlock = kBlockSize / kBigPageSize;

  // Takes the range's pages off the GPU; returns how many were there.
  uint64_t drop(uint64_t address, uint64_t bytes) {
    uint64_t dropped = 0;
    for_pages(address, bytes, [&](uint64_t page) {
      auto it = resident_.find(page / kPagesPerBlock);
      if (it == resident_.end()) return;
      const uint32_t bit = 1u << (page % kPagesPerBlock);
      dropped += (it->second & bit) != 0;
      it->second &= ~bit;
      if (!it->second) resident_.erase(it);
    });
    return dropped;
  }

  // The touched page and the rest of its block that lies in the same allocation.
  void bring_block(uint64_t address) {
    auto alloc = std::prev(sizes_.upper_bound(address));
    const uint64_t block = address / kBlockSize * kBlockSize;
    const uint64_t lo = std::max(block, alloc->first);
    const uint64_t hi = std::min(block + kBlockSize, alloc->first + alloc->second);
    for_pages(lo, hi - lo, [&](uint64_t page) {
      const bool touched = page == address / kBigPageSize;
      if (!touched && discarded_.count(page)) return; // discarded until touched or prefetched
      discarded_.erase(page);
      resident_[page / kPagesPerBlock] |= 1u << (page % kPagesPerBlock);
    });
  }

  uint64_t next_ = 1ull << 30;
  std::map<uint64_t, uint64_t> sizes_;
  std::map<uint32_t, uint64_t> slots_, slot_bytes_;
  std::vector<live::Touch> touches_;
  std::map<uint64_t, uint32_t> resident_; // chunk -> its 64 KB big pages on the GPU
  std::set<uint64_t> discarded_; // 64 KB big pages discarded and not touched or prefetched since
  std::vector<uint64_t> faults_; // first touch of each chunk not on the GPU
};

} // namespace fltest
