#include "sim/gpu/kernel_runner.h"

#include "sim/core/error.h"

#include <algorithm>

namespace faultline {

void KernelRunner::start(trace::KernelRecord& kernel, uint64_t index, Time now, Time launched,
                         DoneCallback done) {
  std::swap(kernel_, kernel);
  index_ = index;
  done_ = std::move(done);
  running_ = true;
  next_ = 0;
  start_ = now;
  launched_ = std::min(launched, now);
  shift_ = 0;
  outstanding_ = 0;
  stalled_since_ = -1;
  end_scheduled_ = false;
  faults_ = 0;
  ++generation_;
  advance(now);
}

VaBlock* KernelRunner::lookup(uint64_t block_index) {
  CachedBlock& c = cached_[block_index % kCachedBlocks];
  if (c.generation != generation_ || c.index != block_index)
    c = {generation_, block_index, memory_.find(block_index + block_offset_)};
  return c.block;
}

bool KernelRunner::in_device_memory(Addr address) const {
  if (!device_ranges_ || device_ranges_->empty()) return false;
  auto it = device_ranges_->upper_bound(address);
  if (it == device_ranges_->begin()) return false;
  --it;
  return address < it->first + it->second;
}

// Processes accesses in order until one lies at or beyond the next pending event (which might
// change residency), the kernel stalls, or all are done.
void KernelRunner::advance(Time now) {
  Time horizon = engine_.next_time();
  const size_t n = kernel_.accesses.size();
  while (next_ < n) {
    const trace::Access& a = kernel_.accesses[next_];
    const Time t = start_ + a.offset + shift_;
    if (t >= horizon && t > now) {
      engine_.schedule(t, Priority::kKernel, this, kResume);
      return;
    }
    ++next_;
    if (!access(a, std::max(t, now))) {
      if (stalled_since_ >= 0) return;
      horizon = engine_.next_time();
    }
  }
  try_finish(now);
}

bool KernelRunner::access(const trace::Access& a, Time t) {
  ++stats_.accesses;
  const uint64_t block_index = a.big_page / kBigPagesPerBlock;
  const auto big = static_cast<unsigned>(a.big_page % kBigPagesPerBlock);
  VaBlock* block = lookup(block_index);
  if (!block || !block->allocated.any_in_big_page(big)) {
    if (in_device_memory(a.big_page * kBigPageSize)) {
      ++stats_.hits;
      return true;
    }
    throw SimulationError("kernel #" + std::to_string(index_) + " (" + kernel_.name +
                          ") accesses address 0x" + std::to_string(a.big_page * kBigPageSize) +
                          ", which lies in no live allocation of the trace");
  }
  // Resident when every allocated page of the big page is on this GPU.
  const uint64_t missing =
      block->allocated.big_bits(big) & ~block->resident[gpu_processor(gpu_)].big_bits(big);
  const bool write = a.type == AccessType::kWrite || a.type == AccessType::kAtomic;
  // A write to a page read since its discard faults though the page is resident.
  const bool rewrite = write && block->read_since_discard.any_in_big_page(big);
  if (!missing && !rewrite && block->ready_at[gpu_] <= t) {
    ++stats_.hits;
    if (config_.driver.eviction == config::EvictionOrder::kLru) memory_.touch(*block, gpu_);
    PageMask& unused = block->prefetched_unused[gpu_];
    if (unused.any_in_big_page(big)) {
      const PageMask used = unused & PageMask::big_page(big);
      stats_.prefetch_used += used.count();
      unused = unused.minus(used);
    }
    return true;
  }
  if (block->remote[gpu_].any_in_big_page(big) &&
      (migrator_.pinned(*block, t) || block->access_remotely.any_in_big_page(big))) {
    ++stats_.remote_accesses;
    const Time end =
        from_host_.transfer(std::max(t, block->host_ready_at), kBigPageSize, "remote").end;
    shift_ += end - t;
    return true;
  }
  servicer_.raise(a.big_page + block_offset_ * kBigPagesPerBlock, t, write);
  ++faults_;
  if (++outstanding_ >= profile_.fault_parallelism) stalled_since_ = t;
  return false;
}

void KernelRunner::on_replay(Time now, uint64_t resolved) {
  if (!running_) return;
  if (resolved > 0) engine_.progress(); // a long kernel that keeps faulting is not stuck
  outstanding_ -= std::min(outstanding_, resolved);
  if (stalled_since_ >= 0 && outstanding_ < profile_.fault_parallelism) {
    shift_ += now - stalled_since_;
    stalled_since_ = -1;
    advance(now);
  } else if (next_ == kernel_.accesses.size()) {
    try_finish(now);
  }
}

void KernelRunner::try_finish(Time now) {
  if (outstanding_ > 0 || end_scheduled_) return;
  end_scheduled_ = true;
  engine_.schedule(std::max(now, start_ + kernel_.duration + shift_), Priority::kKernel, this,
                   kEnd);
}

void KernelRunner::handle(uint32_t kind, Time now) {
  if (kind == kResume) return advance(now);
  running_ = false;
  engine_.progress();
  KernelRow row{index_,
                kernel_.name,
                start_,
                now,
                kernel_.duration,
                now - start_ - kernel_.duration,
                kernel_.accesses.size(),
                faults_,
                launched_};
  ++stats_.kernels;
  stats_.compute_ns += row.compute_ns;
  stats_.stall_ns += row.stall_ns;
  if (config_.per_kernel) stats_.kernel_rows.push_back(row);
  if (observer_) observer_->on_kernel(gpu_, row);
  done_(now);
}

std::string KernelRunner::describe_in_flight() const {
  if (!running_) return "GPU " + std::to_string(gpu_) + ": no kernel running";
  return "GPU " + std::to_string(gpu_) + ": kernel #" + std::to_string(index_) + " (" +
         kernel_.name + ") at access " + std::to_string(next_) + " of " +
         std::to_string(kernel_.accesses.size()) + ", " + std::to_string(outstanding_) +
         " faults outstanding" +
         (stalled_since_ >= 0 ? ", stalled since " + std::to_string(stalled_since_) + " ns"
                              : std::string());
}

} // namespace faultline
