// The oracle's planning on any foresight (foresight.h): it keeps on the GPU exactly the 64 KB big
// pages the coming accesses need, as far ahead as fit in the GPU's 2 MB chunks: what is missing is
// prefetched in order of need (the link queues it as early as it can), and room is made by
// evicting the resident blocks whose next use lies farthest in the future (Belady's MIN). It plans
// at each launch and again whenever a fault batch shows the running kernel has moved on, so a
// kernel that needs more blocks than fit gets its later blocks in place of those it is done with.
// Pages the host will touch before the next kernel are sent to the host at the end of a kernel,
// so the host takes no fault on them. Blocks the foresight knows nothing of are evicted first,
// the one that came first before the others (the driver's order).
//
// Policies own one and call its hooks from theirs: the oracle on the trace's future, the
// schedule policy on what it learned of the steps before.
#pragma once

#include "policies/freed_blocks.h"
#include "policies/oracle/foresight.h"
#include "policies/policy.h"

#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace faultline::policies::oracle {

class Planner {
public:
  // `lookahead`: how many kernels ahead the window may reach. `discard_freed`: a victim's pages
  // inside allocator blocks the framework has freed are dead: discarded, not written back.
  Planner(uint64_t lookahead, bool discard_freed)
      : lookahead_(lookahead), discard_freed_(discard_freed) {}

  // `foresight` must outlive the planner's use; what it says may change between hooks.
  void start(const StartEvent& e, const Foresight& foresight);
  void alloc(const AllocEvent& e);
  void free(const FreeEvent& e);
  void fault_batch(const FaultBatchEvent& e, Actions& out);
  void memory_pressure() { sync_with_memory(); }
  void kernel_end(const KernelEndEvent& e, Actions& out);
  void kernel_launch(const LaunchEvent& e, Actions& out);
  // Whether to plan while the running kernel needs more blocks than fit (else it is left to the
  // driver, as a foresight that does not know the order of a kernel's accesses may choose).
  void plan_overflowing_kernels(bool plan) { overflowing_kernels_ = plan; }
  // Whether a plan may extend the last one by the kernels that entered the window instead of
  // walking the whole window again (on by default; off, every plan walks it: the reference the
  // tests hold the shortcut to).
  void extend_plans(bool on) { extend_ = on; }
  // How many plans extended the one before.
  uint64_t plans_extended() const { return plans_extended_; }

private:
  // A block the planner believes on the GPU: the pages it put there (or saw fault), and when the
  // block came, in arrivals.
  struct Held {
    PageBits pages = 0;
    uint64_t since = 0;
  };
  // Unordered: blocks are looked up at every plan, and the one walk over all of them
  // (evict_for) sorts what it finds by a key that names the block.
  using Resident = std::unordered_map<uint64_t, Held>;

  Held& hold(uint64_t block);
  void plan(When now, Actions& out);
  bool extend_plan(When now, Actions& out);
  uint64_t room_blocks() const;
  void bring(uint64_t block, PageBits pages, Actions& out);
  void uncover() { covered_.valid = false; }
  std::vector<BlockUse>& window(When now, uint64_t room, bool& overflows, uint64_t& walked,
                                bool& host_free) const;
  PageBits live_pages(uint64_t block) const;
  void forget_live_pages(const Range& r);
  PageBits live_pages_uncached(uint64_t block) const;
  void forget(Resident::iterator it, PageBits pages);
  void evict_for(size_t incoming, uint64_t room, const std::unordered_set<uint64_t>& keep, When now,
                 Actions& out);
  void evict(uint64_t block, Actions& out) const;
  const uint32_t* first_touch(uint64_t block) const;
  uint64_t free_blocks() const;
  void sync_with_memory();

  uint64_t lookahead_;
  bool discard_freed_;
  bool overflowing_kernels_ = true;
  const Foresight* future_ = nullptr;
  const MemoryView* memory_ = nullptr;
  uint64_t capacity_blocks_ = 0, device_blocks_ = 0, oldest_running_ = 0;
  unsigned gpu_index_ = 0;
  ProcessorId gpu_ = gpu_processor(0);
  bool running_ = false;
  uint64_t faulted_blocks_ = 0; // blocks the last fault batch brought that the planner had not
  uint64_t kernel_ = 0;         // the kernel launched last
  When planned_;                // where the last plan began
  // The running kernel's blocks and their first touch, by block (a vector, refilled at each
  // launch without allocating).
  std::vector<std::pair<uint64_t, uint32_t>> first_touch_;
  // reserve_: free blocks the last plan left for faults
  uint64_t arrivals_ = 0, reserve_ = 0;
  // What the last plans hold: while every block the window from `from` to `to` (kernels) wants
  // is on the GPU with the pages it wants (but `unheld` blocks at most, whose allocations do not
  // exist yet), no page left since, the foresight's version unchanged and no host touch among
  // those kernels, the next plan only adds the kernels that entered the window. A plan that
  // fits entirely walks only those (at 100% a launch's plan is one kernel's blocks, not 256).
  struct Covered {
    bool valid = false, host_free = false;
    uint64_t from = 0, to = 0, version = 0, unheld = 0;
  } covered_;
  bool extend_ = true;
  uint64_t plans_extended_ = 0;
  Resident resident_;          // blocks the planner believes on the GPU, and their pages
  std::map<Addr, Addr> live_;  // live managed allocations: start -> end
  FreedBlocks freed_;          // freed allocator blocks (marked with discard_freed)
  mutable std::unordered_map<uint64_t, PageBits> live_pages_; // live_pages() of blocks asked
  // A plan's working sets, kept between plans for their memory.
  mutable struct {
    std::vector<BlockUse> wanted, added;
    std::unordered_map<uint64_t, size_t> slot;
    std::unordered_map<uint64_t, PageBits> host;
    std::unordered_set<uint64_t> keep;
    std::vector<std::tuple<When, uint64_t, uint64_t>> victims;
  } scratch_;
};

} // namespace faultline::policies::oracle
