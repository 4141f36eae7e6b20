#include "sim/run/capacity.h"

#include "sim/host/budget.h"

#include <algorithm>
#include <unordered_map>

namespace faultline {
namespace {

// Calls f(block, pages) for the job's blocks overlapping a range of trace addresses.
template <class F> void for_each_block(JobMemory& m, const policies::Range& range, F&& f) {
  m.memory.for_each_block(range.start + m.offset, range.bytes, f);
}

// The 64 KB pages of a block with any page in `pages`, one bit each (the budget books' form).
uint32_t big_page_bits(const PageMask& pages) {
  uint32_t out = 0;
  for (unsigned p = 0; p < kBigPagesPerBlock; ++p)
    if (pages.any_in_big_page(p)) out |= 1u << p;
  return out;
}

// A prefetch undoes a discard on the pages it names, those already on the GPU included (a read
// does not: VaBlock::read_since_discard).
void undo_discard(VaBlock& block, const PageMask& pages) {
  block.read_since_discard = block.read_since_discard.minus(pages);
}

// The driver evicts when a fault finds the GPU full; the policy hears every batch as serviced;
// prefetches queue on the links as ranges, or wait in the driver's prefetch queue behind faults.
class DriverEvicts : public CapacityKeeper {
public:
  explicit DriverEvicts(JobMemory m) : m_(m) {}

  Time before_launch(const trace::KernelRecord&, uint64_t, Time now) override { return now; }
  void kernel_done(Time) override {}
  std::vector<Addr> batch_faults(const std::vector<uint64_t>& big_pages) const override {
    std::vector<Addr> out;
    out.reserve(big_pages.size());
    for (uint64_t p : big_pages) out.push_back(p * kBigPageSize - m_.offset);
    return out;
  }
  void prefetch(const policies::Range& range, Time now) override {
    const unsigned gpu = m_.gpu;
    for_each_block(m_, range, [&](VaBlock& block, const PageMask& pages_in_range) {
      undo_discard(block, pages_in_range);
      const PageMask pages =
          (pages_in_range & block.allocated).minus(block.resident[gpu_processor(gpu)]);
      if (pages.none()) return;
      if (m_.queue) return m_.queue->enqueue(block.index, pages, now);
      const Time ready = block.chunk[gpu] ? now : m_.migrator.make_room(gpu, now, &block);
      const Time end = m_.migrator.to_gpu(block, gpu, pages, pages, ready, "prefetch");
      block.ready_at[gpu] = std::max(block.ready_at[gpu], end);
    });
  }
  // The GPU's memory is full for real: a chunk a policy evicted takes no other data before its
  // pages have left. (The budget's GPU has memory to spare, so a budget mode's chunk is free at
  // once, as in the live replay and the program.)
  void policy_evicted(bool chunk_freed, Time end) override {
    if (chunk_freed) m_.migrator.leave_at(m_.gpu, end);
  }
  Time migration_start(Time now) const override { return now; }
  void migration_end(Time, Time) override {}

private:
  JobMemory m_;
};

// The memory model's chunks of the job's GPU as the budget's rules read them: another job's
// blocks (harvested memory) are the first victims, then the model's order (first residency:
// the budget mode requires FIFO eviction).
class ModelBooks : public host::ChunkBooks {
public:
  ModelBooks(MemoryModel& memory, unsigned gpu) : memory_(memory), gpu_(gpu) {}
  uint32_t resident_pages(uint64_t chunk) const override {
    const VaBlock* block = memory_.find(chunk);
    if (!block) return 0;
    return big_page_bits(block->resident[gpu_processor(gpu_)]);
  }
  bool holds(uint64_t chunk) const override {
    const VaBlock* block = memory_.find(chunk);
    return block && block->chunk[gpu_];
  }
  uint64_t resident_chunks() const override {
    return memory_.capacity_chunks(gpu_) - memory_.chunks_free(gpu_) - memory_.device_chunks(gpu_);
  }
  uint64_t room_chunks() const override {
    return memory_.capacity_chunks(gpu_) - memory_.device_chunks(gpu_);
  }
  void for_each_victim(const std::function<bool(uint64_t)>& f) const override {
    for (bool foreign : {true, false}) {
      for (const VaBlock* b = memory_.oldest(gpu_); b;) {
        const VaBlock* next = b->next[gpu_]; // f may evict b
        if ((b->home != gpu_) == foreign && !f(b->index)) return;
        b = next;
      }
    }
  }

private:
  MemoryModel& memory_;
  unsigned gpu_;
};

// As `faultline replay` keeps its budget: before each kernel (and each prefetched chunk) the
// oldest chunks it does not need leave; migrations run in order on one stream and a kernel
// starts once those issued before it are done; the policy hears a kernel's faults at its end.
// In the program (`faultline run`, `program_`), the same books and evictions, but the program's
// launch is no replay's: a kernel waits for the migration stream only when something was evicted
// or discarded since the launch before (for its room, a prefetch's or by the policy: the
// launch's stream then waits for everything issued on it, prefetches included), and a prefetch
// of pages the GPU holds makes no call.
class BudgetEvicts : public CapacityKeeper {
public:
  BudgetEvicts(JobMemory m, bool program) : m_(m), books_(m.memory, m.gpu), program_(program) {
    if (m_.stats) m_.stats->migration_stream = true;
  }

  Time before_launch(const trace::KernelRecord& k, uint64_t index, Time now) override {
    admit_ran(); // the previous part's pages
    const std::vector<host::ChunkPages> touched = chunks_of(k);
    const Time stream = std::max(now, done_);
    Time t = stream;
    bool evicted = false;
    const auto what = [&] { return "kernel #" + std::to_string(index) + " (" + k.name + ")"; };
    host::budget::make_room(touched, books_, what, [&](uint64_t victim) {
      evicted = true;
      t = m_.migrator.free_chunk(*m_.memory.find(victim), m_.gpu, t, "budget eviction");
    });
    // Nothing evicted since the launch before: the stream was not made to wait.
    if (program_ && !evicted && !stream_waits_) t = now;
    if (m_.stats && t > now) {
      m_.stats->stream_wait_ns += stream - now;
      m_.stats->eviction_wait_ns += t - stream;
    }
    if (evicted) busy(stream, t);
    stream_waits_ = false;
    done_ = std::max(done_, t);
    // faults_ gathers over a kernel's parts; kernel_done() hands them over.
    if (m_.host.observes_faults()) {
      for (const host::ChunkPages& c : touched)
        if (const uint32_t pages = c.pages & ~known_pages(c.chunk))
          for (unsigned p = 0; p < kBigPagesPerBlock; ++p)
            if (pages >> p & 1)
              faults_.push_back((c.chunk * kBigPagesPerBlock + p) * kBigPageSize - m_.offset);
      ran_ = touched;
    }
    if (program_) return t;
    return done_ + m_.profile.launch_ns; // the replay launches once the host is done
  }

  void before_device(uint64_t chunks, Time now) override {
    const Time start = std::max(now, done_);
    Time t = start;
    books_.for_each_victim([&](uint64_t victim) {
      if (m_.memory.chunks_free(m_.gpu) >= chunks) return false;
      t = m_.migrator.free_chunk(*m_.memory.find(victim), m_.gpu, t, "budget eviction");
      return true;
    });
    busy(start, t);
    done_ = t;
  }

  std::vector<size_t> parts(const trace::KernelRecord& k, uint64_t index) const override {
    const std::vector<host::ChunkPages> touched = chunks_of(k);
    if (touched.size() <= books_.room_chunks()) return {0};
    std::vector<uint64_t> chunk_of_touch;
    chunk_of_touch.reserve(k.accesses.size());
    for (const trace::Access& a : k.accesses) {
      const uint64_t chunk = (m_.offset / kBigPageSize + a.big_page) / kBigPagesPerBlock;
      // As chunks_of: only managed blocks take budget (the replay's plan drops the rest).
      chunk_of_touch.push_back(m_.memory.find(chunk) ? chunk : host::budget::kNoChunk);
    }
    const auto what = [&] { return "kernel #" + std::to_string(index) + " (" + k.name + ")"; };
    return host::budget::parts(chunk_of_touch, books_.room_chunks(), what);
  }

  void kernel_done(Time now) override {
    admit_ran();
    m_.host.kernel_faults(m_.gpu, faults_, now);
    faults_.clear();
  }

  std::vector<Addr> batch_faults(const std::vector<uint64_t>&) const override { return {}; }

  // One call per 2 MB block on the migration stream, in order, as the live replay issues them;
  // each call costs the driver's work besides its copy.
  void prefetch(const policies::Range& range, Time now) override {
    const unsigned gpu = m_.gpu;
    const config::GpuProfile& profile = m_.profile;
    for_each_block(m_, range, [&](VaBlock& block, const PageMask& pages_in_range) {
      undo_discard(block, pages_in_range);
      const PageMask pages =
          (pages_in_range & block.allocated).minus(block.resident[gpu_processor(gpu)]);
      if (program_ && pages.none()) return;
      const Time start = std::max(now, done_);
      const Time t = start + profile.prefetch_call_ns;
      done_ = pages.none() ? t : copy_in(block, pages, t);
      busy(start, done_);
      // The replay's books take a prefetch's pages in, whether or not they were on the GPU.
      if (m_.host.observes_faults()) admit(block.index, big_page_bits(pages_in_range));
    });
  }

  Time stage_call_ns() const override {
    return m_.profile.prefetch_call_ns + m_.profile.prefetch_copy_extra_ns;
  }
  void policy_evicted(bool, Time) override { evicted_last_ = stream_waits_ = true; }
  void policy_discarded() override { stream_waits_ = true; }
  Time migration_start(Time now) const override { return std::max(now, done_); }
  void migration_end(Time start, Time end) override {
    busy(start, end);
    done_ = std::max(done_, end);
  }

private:
  // The migration stream ran from `start` to `end` (what the program measures of it).
  void busy(Time start, Time end) {
    if (m_.stats && end > start) m_.stats->migration_ns += end - start;
  }
  // One prefetch call's copy of `pages` (absent from the GPU) from `t`: room made, the driver's
  // extra costs, then the copy. Returns its end.
  Time copy_in(VaBlock& block, const PageMask& pages, Time t) {
    const unsigned gpu = m_.gpu;
    const config::GpuProfile& profile = m_.profile;
    if (!block.chunk[gpu]) {
      const bool full = m_.memory.chunks_free(gpu) == 0;
      evicted_last_ |= full;
      stream_waits_ |= full;
      t = m_.migrator.make_room(gpu, t, &block);
    }
    // Evicting and prefetching in turn costs more than the two apart (calibrate's swap).
    if (evicted_last_) t += profile.swap_extra_ns;
    evicted_last_ = false;
    const PageMask fresh = block.unpopulated() & pages;
    const PageMask discarded = fresh & block.discarded;
    t += profile.prefetch_populate_ns * fresh.minus(discarded).big_page_count() +
         profile.discarded_prefetch_ns * discarded.big_page_count();
    if (pages.minus(fresh).any()) t += profile.prefetch_copy_extra_ns;
    const Time end = m_.migrator.to_gpu(block, gpu, pages, pages, t, "prefetch");
    block.ready_at[gpu] = std::max(block.ready_at[gpu], end);
    return end;
  }

  // The policy hears of a kernel's faults as the replay's books tell them: the pages the kernel
  // touched that the books do not hold. The books hold what kernels touched and prefetches
  // brought since the chunk arrived, and cannot see the pages the driver's density prefetch
  // brought beside faults; so neither side counts those, and their first touch is reported.
  struct Known {
    uint32_t arrival = 0; // the block's VaBlock::arrivals when these pages were admitted
    uint32_t pages = 0;   // 64 KB pages, one bit each
  };

  uint32_t known_pages(uint64_t chunk) const {
    const VaBlock* block = m_.memory.find(chunk);
    if (!block || !block->chunk[m_.gpu]) return 0;
    auto it = known_.find(chunk);
    if (it == known_.end() || it->second.arrival != block->arrivals[m_.gpu]) return 0;
    return it->second.pages & books_.resident_pages(chunk); // less what left (host, discard)
  }

  void admit(uint64_t chunk, uint32_t pages) {
    const VaBlock* block = m_.memory.find(chunk);
    if (!block || !block->chunk[m_.gpu]) return;
    Known& k = known_[chunk];
    if (k.arrival != block->arrivals[m_.gpu]) k = {block->arrivals[m_.gpu], 0};
    k.pages |= pages;
  }

  void admit_ran() {
    for (const host::ChunkPages& c : ran_) admit(c.chunk, c.pages);
    ran_.clear();
  }

  // The kernel's managed chunks (model indices) and pages, in order of first touch.
  std::vector<host::ChunkPages> chunks_of(const trace::KernelRecord& k) const {
    std::vector<uint64_t> pages;
    pages.reserve(k.accesses.size());
    const uint64_t first = m_.offset / kBigPageSize;
    for (const trace::Access& a : k.accesses)
      if (m_.memory.find((first + a.big_page) / kBigPagesPerBlock))
        pages.push_back(first + a.big_page);
    return host::group_by_chunk(pages);
  }

  JobMemory m_;
  ModelBooks books_;
  Time done_ = 0;             // when the migrations issued so far end
  bool program_;              // as `faultline run` keeps the budget, not the replay
  bool evicted_last_ = false; // the stream's last migration was an eviction
  bool stream_waits_ = false; // evicted or discarded since the last launch (program_)
  std::vector<Addr> faults_;  // the running kernel's absent pages, handed over at its end
  std::unordered_map<uint64_t, Known> known_; // the replay's books, by chunk
  std::vector<host::ChunkPages> ran_;         // the running part's pages, admitted once it ran
};

} // namespace

std::unique_ptr<CapacityKeeper> make_capacity_keeper(config::RunConfig::CapacityMode mode,
                                                     JobMemory parts) {
  if (mode != config::RunConfig::CapacityMode::kDriver)
    return std::make_unique<BudgetEvicts>(parts, mode == config::RunConfig::CapacityMode::kProgram);
  return std::make_unique<DriverEvicts>(parts);
}

} // namespace faultline
