#include "sim/uvm/prefetch_queue.h"

#include <algorithm>

namespace faultline {

void PrefetchQueue::enqueue(uint64_t index, const PageMask& pages, Time now) {
  auto [it, fresh] = pages_.try_emplace(index, pages);
  if (fresh)
    order_.push_back(index);
  else
    it->second |= pages;
  wake(now);
}

void PrefetchQueue::wake(Time at) {
  if (scheduled_ || order_.empty()) return;
  scheduled_ = true;
  engine_.schedule(at, Priority::kDriver, this, 0);
}

Time PrefetchQueue::link_free() const {
  Time free = 0;
  for (const LinkDirection* hop : link_.hops()) free = std::max(free, hop->busy_until());
  return free;
}

// One command at a time: the next waits until this one's copy, and whatever a fault batch put on
// the link meanwhile, has left it.
void PrefetchQueue::handle(uint32_t, Time now) {
  scheduled_ = false;
  while (!order_.empty()) {
    const Time free = link_free();
    if (free > now) return wake(free);
    const uint64_t index = order_.front();
    order_.pop_front();
    const PageMask pages = pages_.at(index);
    pages_.erase(index);
    run_one(index, pages, now);
  }
}

void PrefetchQueue::run_one(uint64_t index, const PageMask& asked, Time now) {
  VaBlock* block = memory_.find(index);
  if (!block) return; // freed while it waited
  const PageMask pages = (asked & block->allocated).minus(block->resident[gpu_processor(gpu_)]);
  if (pages.none()) return;
  const Time ready = block->chunk[gpu_] ? now : migrator_.make_room(gpu_, now, block);
  const Time end = migrator_.to_gpu(*block, gpu_, pages, pages, ready, "prefetch");
  block->ready_at[gpu_] = std::max(block->ready_at[gpu_], end);
}

std::string PrefetchQueue::describe_in_flight() const {
  return "prefetch queue GPU " + std::to_string(gpu_) + ": " + std::to_string(order_.size()) +
         " blocks waiting behind faults and the link";
}

} // namespace faultline
