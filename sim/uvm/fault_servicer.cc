#include "sim/uvm/fault_servicer.h"

#include "sim/uvm/density_prefetcher.h"

#include <algorithm>

namespace faultline {

void FaultServicer::raise(uint64_t big_page, Time now, bool write) {
  buffer_.push_back(big_page << 1 | (write ? 1 : 0));
  ++stats_.faults;
  if (!busy_ && !fetch_scheduled_) {
    fetch_scheduled_ = true;
    engine_.schedule(now, Priority::kDriver, this, kFetch);
  }
}

void FaultServicer::handle(uint32_t kind, Time now) {
  if (kind == kFetch) {
    fetch_scheduled_ = false;
    fetch(now);
  } else {
    replay(now);
  }
}

// Takes up to batch_size entries, coalesces duplicates, and services each VA block in address
// order. The CPU-side costs run in sequence; copies overlap with them on the link and the batch
// ends when both are done.
void FaultServicer::fetch(Time now) {
  const size_t n = std::min<size_t>(driver_.batch_size, buffer_.size());
  batch_.assign(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(n));
  buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(n));
  std::sort(batch_.begin(), batch_.end());
  // Entries to pages (in place) and to each block's faulted and written pages: a page read and
  // written in one batch counts as written.
  blocks_.clear();
  size_t pages = 0;
  for (size_t i = 0; i < batch_.size(); ++i) {
    const uint64_t entry = batch_[i], page = entry >> 1; // read before the slot is reused
    if (pages == 0 || batch_[pages - 1] != page) batch_[pages++] = page;
    const uint64_t index = page / kBigPagesPerBlock;
    if (blocks_.empty() || blocks_.back().index != index) blocks_.push_back({index, {}, {}});
    const PageMask mask = PageMask::big_page(page % kBigPagesPerBlock);
    blocks_.back().faulted |= mask;
    if (entry & 1) blocks_.back().written |= mask;
  }
  batch_.resize(pages);
  stats_.duplicate_faults += n - batch_.size();
  ++stats_.batches;
  busy_ = true;
  in_service_ = n;
  batch_start_ = now;

  Time cpu = now + profile_.batch_fixed_ns + profile_.per_fault_ns * static_cast<Time>(n);
  Time copies_done = cpu, in_flight = 0;
  serviced_.clear();
  for (const BlockFaults& b : blocks_) cpu = service_block(b, cpu, copies_done, in_flight);
  // Faults on pages already on their way (a prefetch's, an earlier batch's) wait for them.
  const Time end = std::max({cpu, copies_done, in_flight});
  stats_.prefetch_wait_ns += end - std::max(cpu, copies_done);
  for (VaBlock* block : serviced_) block->ready_at[gpu_] = std::max(block->ready_at[gpu_], end);
  stats_.blocks_serviced += blocks_.size();
  stats_.batch_ns += end - now;
  if (observer_) observer_->on_fault_batch(gpu_, now, end, n, blocks_.size());
  engine_.schedule(end, Priority::kDriver, this, kReplay);
  if (listener_) listener_->on_batch(now, batch_);
}

Time FaultServicer::service_block(const BlockFaults& faults, Time cpu, Time& copies_done,
                                  Time& in_flight) {
  cpu += profile_.per_vablock_ns;
  VaBlock* block = memory_.find(faults.index);
  if (!block) return cpu; // freed since the fault was raised: nothing to do
  const ProcessorId dest = gpu_processor(gpu_);
  PageMask grown = grow_to_big_pages(faults.faulted) & block->allocated;
  // Thrashing pins and remote-access advice keep pages on the host and map them remotely.
  const PageMask mapped = migrator_.pinned(*block, cpu) ? grown : grown & block->access_remotely;
  if (mapped.any()) {
    const PageMask host_pages = mapped.minus(block->resident[dest]);
    for (unsigned g = 0; g < memory_.gpus(); ++g) { // pages on a neighbour go home first
      const PageMask there = host_pages & block->resident[gpu_processor(g)];
      if (g != gpu_ && there.any())
        copies_done = std::max(copies_done, migrator_.to_host(*block, g, there, cpu, "remote map"));
    }
    migrator_.to_host(*block, gpu_, host_pages, cpu, "remote map");
    block->remote[gpu_] |= host_pages;
    grown = grown.minus(mapped);
    if (grown.none()) return cpu + profile_.page_table_update_ns;
  }
  PageMask& unused = block->prefetched_unused[gpu_];
  stats_.prefetch_used += (unused & grown).count(); // prefetched, still in flight, needed now
  unused = unused.minus(grown);
  const PageMask resident = block->resident[dest];
  PageMask extra;
  if (driver_.prefetch) {
    extra = density_prefetch(resident, faults.faulted, block->allocated, driver_.prefetch_threshold)
                .minus(block->access_remotely);
  }
  const PageMask pages = grown.minus(resident) | extra;
  const Time discarded_ns =
      block->chunk[gpu_] ? profile_.discarded_resident_fault_ns : profile_.discarded_fault_ns;
  // Resident pages read since their discard: the first write pays the discard's cost.
  const PageMask rewritten = grown & resident & block->read_since_discard & faults.written;
  if (rewritten.any()) {
    block->read_since_discard = block->read_since_discard.minus(rewritten);
    stats_.discarded_refaults += rewritten.big_page_count();
    cpu += discarded_ns * rewritten.big_page_count();
  }
  if (pages.none()) { // already resident: wait for copies in flight, if any
    in_flight = std::max(in_flight, block->ready_at[gpu_]);
    return cpu + profile_.page_table_update_ns;
  }
  if (!block->chunk[gpu_]) {
    const Time before = cpu;
    cpu = migrator_.make_room(gpu_, cpu, block);
    stats_.eviction_wait_ns += cpu - before;
  }
  // Demand paging runs far below the link's rate (h200-probe.md: ~7 GB/s): the per-page work
  // of the driver (host unmap, DMA map) is on the CPU side, serial with the batch.
  const PageMask fresh = block->unpopulated() & pages;
  // Only a write to a discarded page pays for it: live DeepUM replays' kernels that read pages
  // it had discarded (GEMMs whose operands the capture records as reads) paid about a first
  // touch, those writing them the discarded cost (experiments/live/data/h200-eviction-regimes/).
  // A read leaves the page discarded to the driver until a write (read_since_discard).
  const PageMask discarded = fresh & block->discarded & faults.written;
  stats_.discarded_refaults += discarded.big_page_count();
  stats_.discarded_read_refaults += (fresh & block->discarded).minus(discarded).big_page_count();
  const PageMask from_host = block->resident[kHost] & pages;
  cpu += profile_.populate_ns * fresh.minus(discarded).big_page_count() +
         discarded_ns * discarded.big_page_count() +
         profile_.fault_migrate_ns * from_host.big_page_count() +
         profile_.peer_fault_migrate_ns *
             pages.minus(fresh).minus(resident).minus(from_host).big_page_count();
  const PageMask read_discarded = (fresh & block->discarded).minus(discarded);
  copies_done =
      std::max(copies_done, migrator_.to_gpu(*block, gpu_, pages, extra, cpu, "fault", true));
  block->read_since_discard |= read_discarded & block->resident[dest];
  serviced_.push_back(block);
  return cpu + profile_.page_table_update_ns;
}

void FaultServicer::replay(Time now) {
  busy_ = false;
  const uint64_t resolved = in_service_;
  in_service_ = 0;
  if (listener_) listener_->on_replay(now, resolved);
  if (!buffer_.empty() && !fetch_scheduled_) {
    fetch_scheduled_ = true;
    engine_.schedule(now, Priority::kDriver, this, kFetch);
  }
}

std::string FaultServicer::describe_in_flight() const {
  return "fault servicer GPU " + std::to_string(gpu_) + ": " +
         (busy_ ? "servicing a batch of " + std::to_string(in_service_) + " faults since " +
                      std::to_string(batch_start_) + " ns"
                : std::string("idle")) +
         ", " + std::to_string(buffer_.size()) + " faults waiting in the buffer";
}

} // namespace faultline
