// A prefetch queue that fault servicing always overtakes, as DeepUM's driver module runs it
// (Jung et al., ASPLOS '23, §3.1: its migration thread serves two queues, and the fault queue
// always has priority over the prefetch queue). Prefetch commands wait here, one 2 MB block
// each, in the order given; a command runs only when the host link to the GPU is free, so a
// command's copy never delays a fault batch's copies that were there first (a batch reserves the
// link for its copies when it is fetched), and its eviction (when the GPU is full) happens when
// it runs, not when it was asked for. The link keeps one busy-until time per direction, so a
// command cannot use the gaps between a batch's copies.
#pragma once

#include "sim/core/engine.h"
#include "sim/link/link.h"
#include "sim/uvm/migrator.h"

#include <deque>
#include <unordered_map>

namespace faultline {

// Contract: enqueue() may be called at any time; queued commands run at engine events of
// priority kDriver, each migrating its block's missing pages (evicting as a fault would) and
// setting the block's ready time. A command whose block was freed, or whose pages are all on the
// GPU by the time it runs, does nothing.
class PrefetchQueue : public EventHandler {
public:
  PrefetchQueue(Engine& engine, MemoryModel& memory, Migrator& migrator, const Route& host_to_gpu,
                unsigned gpu)
      : engine_(engine), memory_(memory), migrator_(migrator), link_(host_to_gpu), gpu_(gpu) {}

  // Queues `pages` of block `index` (model index); a block already queued gets the pages added
  // and keeps its place.
  void enqueue(uint64_t index, const PageMask& pages, Time now);
  size_t waiting() const { return order_.size(); }

  void handle(uint32_t kind, Time now) override;
  std::string describe_in_flight() const override;

private:
  void wake(Time at);
  Time link_free() const;
  void run_one(uint64_t index, const PageMask& pages, Time now);

  Engine& engine_;
  MemoryModel& memory_;
  Migrator& migrator_;
  const Route& link_;
  unsigned gpu_;
  std::deque<uint64_t> order_;                   // queued blocks, oldest command first
  std::unordered_map<uint64_t, PageMask> pages_; // queued block -> pages asked for
  bool scheduled_ = false;
};

} // namespace faultline
