#include "sim/live/replay.h"

#include "policies/registry.h"
#include "sim/core/error.h"
#include "sim/live/plan.h"
#include "sim/live/residency.h"
#include "sim/run/results.h"
#include "sim/trace/inspect.h"
#include "sim/trace/step_repeater.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace faultline::live {
namespace {

// Wall time with pauses (allocation, draining) left out.
class Clock {
public:
  Clock() : start_(now()) {}
  static Time now() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  void pause() { paused_at_ = now(); }
  void resume() { paused_ += now() - paused_at_; }
  Time elapsed() const { return now() - start_ - paused_; }
  void wait_until(Time elapsed_target) const {
    while (elapsed() < elapsed_target) {
    }
  }

private:
  Time start_, paused_ = 0, paused_at_ = 0;
};

struct Measured {
  Time compute_ns = 0, stall_ns = 0;
  uint64_t accesses = 0, kernels = 0, budget_evicted_chunks = 0;
  uint64_t policy_evicted_bytes = 0, discarded_bytes = 0, prefetch_bytes = 0;
  uint64_t reported_faults = 0; // faults handed to the policy
  uint64_t unmapped_faults = 0; // CUPTI records outside the trace's managed memory
  uint64_t peer_evicted_chunks = 0, bytes_to_peer = 0, bytes_staged = 0;
  Time policy_ns = 0; // deciding, untimed
  nlohmann::json rows = nlohmann::json::array();
  nlohmann::json steps = nlohmann::json::array(); // a row per training step
};

// What a training step's row counts, as totals so far.
struct StepTotals {
  Time start = 0;
  Time compute_ns = 0, stall_ns = 0;
  uint64_t kernels = 0, accesses = 0, evictions = 0, prefetch_bytes = 0, reported_faults = 0;
  Counters counters;

  StepTotals(Time at, const Measured& m, const Counters& c)
      : start(at), compute_ns(m.compute_ns), stall_ns(m.stall_ns), kernels(m.kernels),
        accesses(m.accesses), evictions(m.budget_evicted_chunks), prefetch_bytes(m.prefetch_bytes),
        reported_faults(m.reported_faults), counters(c) {}

  // The row of the step that began at `from` and ends here, with the simulator's field names.
  nlohmann::json row_since(const StepTotals& from, int64_t step) const {
    const Counters& a = from.counters;
    return {{"step", step},
            {"start_ns", from.start},
            {"end_ns", start},
            {"time_ns", start - from.start},
            {"compute_ns", compute_ns - from.compute_ns},
            {"fault_stall_ns", stall_ns - from.stall_ns},
            {"kernels", kernels - from.kernels},
            {"accesses", accesses - from.accesses},
            {"faults", counters.gpu_fault_records - a.gpu_fault_records},
            {"faults_reported_to_policy", reported_faults - from.reported_faults},
            {"bytes_host_to_gpu", counters.bytes_host_to_gpu - a.bytes_host_to_gpu},
            {"bytes_gpu_to_host", counters.bytes_gpu_to_host - a.bytes_gpu_to_host},
            {"evictions", evictions - from.evictions},
            {"prefetch_issued_bytes", prefetch_bytes - from.prefetch_bytes}};
  }
};

// The replay is also the policy's memory view: its residency model answers for GPU 0, its
// record of chunks placed on the neighbour for GPU 1.
class Replay : public policies::MemoryView {
public:
  Replay(const ReplayJob& job, LiveDevice& device, Plan plan, uint64_t budget_chunks)
      : job_(job), device_(device), plan_(std::move(plan)), residency_(budget_chunks),
        peer_chunks_(job.peer_budget_bytes / kBlockSize),
        peer_reserve_chunks_((job.peer_reserve_bytes + kBlockSize - 1) / kBlockSize) {
    policy_ = policies::Registry::instance().create(job.policy, job.policy_params,
                                                    "replay --policy " + job.policy);
  }

  Measured run(Time& total_ns) {
    clock_.pause(); // setup, not replay
    if (!plan_.touches.empty() &&
        !device_.upload_touches(plan_.touches.data(), plan_.touches.size()))
      fail("uploading the kernels' touches");
    clock_.resume();
    actions_.clear();
    decide([&] {
      policies::StartEvent start;
      start.gpu_capacity = residency_.budget_chunks() * kBlockSize;
      start.trace_path = job_.trace_path;
      start.iterations = job_.iterations;
      start.memory = this;
      if (peer_chunks_ > 0) {
        start.gpus = 2;
        start.nvlink_peers = {1};
      }
      policy_->on_start(start, actions_);
    });
    execute();
    size_t next_training_step = 0;
    for (size_t i = 0; i < plan_.steps.size(); ++i) {
      const Step& step = plan_.steps[i];
      // As in the simulator, the host time before a step's first record belongs to the step
      // before it.
      clock_.wait_until(last_end_ + step.gap);
      for (; next_training_step < plan_.training_steps.size() &&
             plan_.training_steps[next_training_step].at == i;
           ++next_training_step)
        begin_step(plan_.training_steps[next_training_step].step);
      if (step.type == trace::RecordType::kAlloc) alloc(step.alloc);
      if (step.type == trace::RecordType::kFree) free(step.id);
      if (step.type == trace::RecordType::kHostAccess) host_access(step.host);
      if (step.type == trace::RecordType::kKernel) kernel(step.kernel);
    }
    clock_.pause();
    device_.quiesce();
    total_ns = clock_.elapsed();
    for (; next_training_step < plan_.training_steps.size(); ++next_training_step)
      begin_step(plan_.training_steps[next_training_step].step, total_ns); // steps without work
    if (step_start_) close_step(total_ns);
    for (const auto& [base, a] : live_) device_.free_managed(a.live);
    return std::move(measured_);
  }

  uint64_t peak_chunks() const { return residency_.peak_chunks(); }

  Bytes free_bytes(unsigned gpu) const override {
    if (gpu == 0) {
      const uint64_t room = residency_.available_chunks(), used = residency_.resident_chunks();
      return room > used ? (room - used) * kBlockSize : 0;
    }
    return gpu == 1 && peer_chunks_ > on_peer_.size()
               ? (peer_chunks_ - on_peer_.size()) * kBlockSize
               : 0;
  }

  ProcessorId holder(Addr address) const override {
    ProcessorId at = kNoProcessor;
    for_each_live(address, 1, [&](void* p, Bytes) {
      const uint64_t chunk = reinterpret_cast<uint64_t>(p) / kBlockSize;
      if (touched_.count(chunk)) at = kHost;
      if (residency_.holds_chunk(chunk)) at = gpu_processor(0);
      if (on_peer_.count(chunk)) at = gpu_processor(1);
    });
    return at;
  }

  std::vector<Addr> oldest_blocks(unsigned gpu, size_t n) const override {
    std::vector<Addr> out;
    if (gpu != 0) return out;
    for (uint64_t chunk : residency_.oldest(n)) {
      const Addr a = to_trace(chunk * kBlockSize);
      if (a != kNoAddress) out.push_back(a);
    }
    return out;
  }

private:
  struct LiveAlloc {
    void* live = nullptr;
    Bytes size = 0;
    uint64_t id = 0;
  };

  // A policy's decision is not timed: the simulator charges none, and a real implementation
  // (DeepUM's driver thread) decides beside the GPU's work. Its time is reported on its own.
  template <typename F> void decide(F f) {
    clock_.pause();
    time_policy(f);
    clock_.resume();
  }
  template <typename F> void time_policy(F f) {
    const Time t0 = Clock::now();
    f();
    measured_.policy_ns += Clock::now() - t0;
  }

  [[noreturn]] void fail(const std::string& what) {
    throw SimulationError("live replay: " + what + ": " + device_.error());
  }

  // A training step begins. The step before ends once the migrations it issued are done
  // (waited for on the clock); its counters are drained off it. `paused_at`: the clock is
  // paused already, at that time (steps after the last record).
  void begin_step(int64_t step, Time paused_at = -1) {
    const bool paused = paused_at >= 0;
    Time at = paused ? paused_at : now();
    if (step_start_ && !paused) {
      device_.synchronize();
      at = now();
      clock_.pause();
      device_.quiesce();
    }
    if (step_start_) close_step(at);
    if (step_start_ && !paused) clock_.resume();
    // The first row starts at 0, so that the rows add up to the totals.
    step_start_ = step_start_ ? StepTotals(at, measured_, device_.counters())
                              : StepTotals(0, Measured{}, Counters{});
    step_ = step;
    if (step < 0 || paused) return;
    actions_.clear();
    decide([&] { policy_->on_step_begin({now(), static_cast<uint64_t>(step)}, actions_); });
    execute();
  }

  void close_step(Time end) {
    const StepTotals totals(end, measured_, device_.counters());
    measured_.steps.push_back(totals.row_since(*step_start_, step_));
  }

  void alloc(const trace::AllocRecord& a) {
    if (a.kind == trace::MemoryKind::kDevice) residency_.reserve(chunks_of(a.size));
    if (a.kind == trace::MemoryKind::kManaged) {
      clock_.pause(); // the simulator counts allocation as free
      void* p = device_.alloc_managed(a.size);
      if (!p) fail("allocating " + std::to_string(a.size) + " managed bytes");
      const uint32_t slot = plan_.slots.at(a.id);
      device_.set_slot(slot, p);
      if (slot_base_.size() <= slot) slot_base_.resize(slot + 1);
      slot_base_[slot] = reinterpret_cast<uint64_t>(p);
      live_[a.address] = {p, a.size, a.id};
      by_live_[reinterpret_cast<uint64_t>(p)] = {a.size, a.address};
      clock_.resume();
    }
    actions_.clear();
    decide([&] {
      policy_->on_alloc({now(),
                         a.id,
                         a.kind != trace::MemoryKind::kDevice,
                         a.kind == trace::MemoryKind::kAllocatorBlock,
                         a.segment,
                         {a.address, a.size}},
                        actions_);
    });
    execute();
    ranges_[a.id] = a;
  }

  static int64_t chunks_of(Bytes size) {
    return static_cast<int64_t>((size + kBlockSize - 1) / kBlockSize);
  }

  void free(uint64_t id) {
    auto r = ranges_.find(id);
    if (r == ranges_.end()) return;
    const trace::AllocRecord a = r->second;
    ranges_.erase(r);
    actions_.clear();
    decide([&] {
      policy_->on_free({now(),
                        id,
                        a.kind != trace::MemoryKind::kDevice,
                        a.kind == trace::MemoryKind::kAllocatorBlock,
                        {a.address, a.size}},
                       actions_);
    });
    execute();
    if (a.kind == trace::MemoryKind::kDevice) residency_.reserve(-chunks_of(a.size));
    if (a.kind != trace::MemoryKind::kManaged) return;
    const Addr address = a.address;
    const Bytes size = a.size;
    auto it = live_.find(address);
    if (it == live_.end()) return;
    forget(it->second.live, size);
    const auto base = reinterpret_cast<uint64_t>(it->second.live);
    for (uint64_t c = base / kBlockSize; c * kBlockSize < base + size; ++c) touched_.erase(c);
    note_discarded(base, size, false);
    by_live_.erase(reinterpret_cast<uint64_t>(it->second.live));
    device_.synchronize(); // migrations still running are the replay's time, as cudaFree waits
    clock_.pause();
    device_.free_managed(it->second.live);
    clock_.resume();
    live_.erase(it);
  }

  // The host touches managed memory: its pages on the GPU come back (CPU faults), timed.
  void host_access(const trace::HostAccessRecord& h) {
    for_each_live_chunk(h.address, h.size, [&](void* p, Bytes n, uint64_t chunk) {
      device_.host_write(p, n);
      forget(p, n);
      touched_.insert(chunk); // the host's data must come over when the GPU touches it
    });
  }

  void kernel(uint64_t index) {
    const Kernel& k = plan_.kernels[index];
    actions_.clear();
    policies::LaunchEvent event{now(), index, &k.name, {}};
    for (uint64_t id : k.args) {
      auto r = ranges_.find(id);
      if (r != ranges_.end()) event.args.push_back({r->second.address, r->second.size});
    }
    const Time start = now(); // what runs from here to the kernel's end is its span
    decide([&] { policy_->on_kernel_launch(event, actions_); });
    execute();
    const std::vector<Residency::ChunkPages> chunks = live_chunks(k);
    evict_chunks(residency_.make_room(chunks), measured_.budget_evicted_chunks);
    const bool watched = policy_->observes_faults();
    if (watched && job_.fault_source == ReplayJob::FaultSource::kBooks) note_absent(chunks);
    admit(chunks);
    for (const Residency::ChunkPages& c : chunks) { // faults pull them back from the neighbour
      on_peer_.erase(c.chunk);
      touched_.insert(c.chunk);
    }
    if (!device_.run_kernel(k.first, k.count, static_cast<uint64_t>(k.duration)))
      fail("running kernel #" + std::to_string(index) + " (" + k.name + ")");
    last_end_ = now();
    record(index, k, start, last_end_ - start);
    if (watched) {
      clock_.pause(); // the GPU is idle: the kernel waited for every migration issued before it
      report_faults(index);
      clock_.resume();
    }
    actions_.clear();
    decide([&] { policy_->on_kernel_end({last_end_, index}, actions_); });
    execute();
  }

  // The pages the kernel is about to touch that are off the GPU: each faults (in the timed
  // loop only the masks are kept; the addresses are made after the kernel).
  void note_absent(const std::vector<Residency::ChunkPages>& chunks) {
    absent_.clear();
    for (const Residency::ChunkPages& c : chunks)
      if (const uint32_t pages = residency_.absent(c)) absent_.push_back({c.chunk, pages});
  }

  // The kernel's faults, at trace addresses, to the policy: from the books, or CUPTI's records
  // since the last drain (records outside the trace's memory are counted and dropped).
  void report_faults(uint64_t index) {
    std::vector<Addr> faults;
    if (job_.fault_source == ReplayJob::FaultSource::kBooks) {
      for (const Residency::ChunkPages& c : absent_)
        for (unsigned p = 0; p < kBigPagesPerBlock; ++p)
          if (c.pages >> p & 1) faults.push_back(to_trace(c.chunk * kBlockSize + p * kBigPageSize));
    } else {
      if ((index + 1) % job_.drain_every != 0) return;
      device_.quiesce();
      uint64_t addresses[256];
      for (uint64_t n; (n = device_.take_faults(addresses, 256)) > 0;)
        faults.insert(faults.end(), addresses, addresses + n);
      for (Addr& a : faults) a = to_trace(a);
    }
    const auto outside = std::erase(faults, kNoAddress);
    measured_.unmapped_faults += outside;
    measured_.reported_faults += faults.size();
    if (job_.per_kernel) measured_.rows.back()["faults_reported"] = faults.size();
    deliver_faults(std::move(faults));
  }

  // As the driver hands them over (policies::driver_batches), at 64 KB pages.
  void deliver_faults(std::vector<Addr> faults) {
    for (Addr& a : faults) a = a / kBigPageSize * kBigPageSize;
    for (const policies::FaultBatchEvent& event : policies::driver_batches(last_end_, 0, faults)) {
      actions_.clear();
      time_policy([&] { policy_->on_fault_batch(event, actions_); }); // paused already
      execute();
    }
  }

  static constexpr Addr kNoAddress = ~Addr{0};
  Addr to_trace(uint64_t live) const {
    auto it = by_live_.upper_bound(live);
    if (it == by_live_.begin()) return kNoAddress;
    --it;
    if (live >= it->first + it->second.size) return kNoAddress;
    return it->second.trace + (live - it->first);
  }

  void record(uint64_t index, const Kernel& k, Time start, Time span) {
    measured_.kernels++;
    measured_.accesses += k.count;
    measured_.compute_ns += k.duration;
    measured_.stall_ns += std::max<Time>(0, span - k.duration);
    if (!job_.per_kernel) return;
    measured_.rows.push_back({{"index", index},
                              {"name", k.name},
                              {"start_ns", start},
                              {"end_ns", last_end_},
                              {"gpu_ns", span},
                              {"compute_ns", k.duration},
                              {"stall_ns", std::max<Time>(0, span - k.duration)},
                              {"accesses", k.count}});
  }

  Time now() const { return clock_.elapsed(); }

  // Calls f(live pointer, bytes) for each piece of the trace's [start, start + bytes) that
  // lies in a live managed allocation.
  template <typename F> void for_each_live(Addr start, Bytes bytes, F f) const {
    auto it = live_.upper_bound(start);
    if (it != live_.begin()) --it;
    for (; it != live_.end() && it->first < start + bytes; ++it) {
      const Addr lo = std::max(start, it->first);
      const Addr hi = std::min(start + bytes, it->first + it->second.size);
      if (lo < hi) f(static_cast<char*>(it->second.live) + (lo - it->first), hi - lo);
    }
  }

  // As for_each_live, cut further at live 2 MB chunk boundaries: f(live pointer, bytes, chunk).
  template <typename F> void for_each_live_chunk(Addr start, Bytes bytes, F f) const {
    for_each_live(start, bytes, [&](void* p, Bytes n) {
      for (auto at = reinterpret_cast<uint64_t>(p), end = at + n; at < end;) {
        const uint64_t next = std::min(end, (at / kBlockSize + 1) * kBlockSize);
        f(reinterpret_cast<void*>(at), next - at, at / kBlockSize);
        at = next;
      }
    });
  }

  // The residency model works in live addresses (the driver's chunks are the live ones): the
  // kernel's chunks through the slot table, as the device reads them. A live allocation that
  // does not start on a 2 MB boundary splits each of its chunks over two live ones.
  std::vector<Residency::ChunkPages> live_chunks(const Kernel& k) const {
    std::vector<Residency::ChunkPages> out;
    out.reserve(k.chunk_count);
    for (uint64_t i = k.first_chunk; i < k.first_chunk + k.chunk_count; ++i) {
      const SlotChunk& c = plan_.chunks[i];
      const uint64_t first_page =
          slot_base_[c.slot] / kBigPageSize + uint64_t{c.chunk} * kBigPagesPerBlock;
      const unsigned shift = first_page % kBigPagesPerBlock;
      const uint64_t pages = uint64_t{c.pages} << shift;
      out.push_back({first_page / kBigPagesPerBlock, static_cast<uint32_t>(pages)});
      if (pages >> 32) out.push_back({first_page / kBigPagesPerBlock + 1, uint32_t(pages >> 32)});
    }
    return out;
  }

  void admit(const std::vector<Residency::ChunkPages>& chunks) {
    residency_.admit(chunks);
    for (const Residency::ChunkPages& c : chunks) {
      auto d = discarded_.find(c.chunk);
      if (d != discarded_.end() && !(d->second &= ~c.pages)) discarded_.erase(d);
    }
  }

  // Calls f(chunk, page bit) for each 64 KB page [address, address + n) overlaps, as the books
  // count pages (forget).
  template <typename F> static void for_pages(uint64_t address, Bytes n, F f) {
    for (uint64_t q = address / kBigPageSize; q * kBigPageSize < address + n; ++q)
      f(q / kBigPagesPerBlock, 1u << (q % kBigPagesPerBlock));
  }

  // Discarded pages hold dead data until a kernel or a prefetch brings them back; a page partly
  // discarded is left out of evictions too (at most two a discard stay on the GPU).
  void note_discarded(uint64_t address, Bytes n, bool dead) {
    for_pages(address, n, [&](uint64_t chunk, uint32_t bit) {
      if (dead) {
        discarded_[chunk] |= bit;
        return;
      }
      auto d = discarded_.find(chunk);
      if (d != discarded_.end() && !(d->second &= ~bit)) discarded_.erase(d);
    });
  }

  // The range left GPU 0 (and the neighbour, whose chunks are whole).
  void forget(void* p, Bytes n) {
    const auto first = reinterpret_cast<uint64_t>(p) / kBigPageSize;
    const auto last = (reinterpret_cast<uint64_t>(p) + n - 1) / kBigPageSize;
    residency_.remove(first, last - first + 1);
    for (uint64_t c = first * kBigPageSize / kBlockSize; c <= last * kBigPageSize / kBlockSize; ++c)
      on_peer_.erase(c);
  }

  bool peer_has_room() const {
    return peer_chunks_ > on_peer_.size() && peer_chunks_ - on_peer_.size() > peer_reserve_chunks_;
  }

  // An eviction to the neighbour, chunk by chunk while it has room; the rest to the host.
  void evict(const policies::Action& a) {
    if (a.target != kHost && (a.target != gpu_processor(1) || peer_chunks_ == 0))
      throw SimulationError("live replay: policy " + job_.policy + " evicted to processor " +
                            std::to_string(a.target) + "; this replay has the host" +
                            (peer_chunks_ ? " and the neighbour (processor 2)" : ""));
    for_each_live_chunk(a.range.start, a.range.bytes, [&](void* p, Bytes n, uint64_t chunk) {
      if (a.target != kHost && !on_peer_.count(chunk) && residency_.holds_chunk(chunk) &&
          peer_has_room()) {
        device_.prefetch_to_peer(p, n);
        forget(p, n);
        on_peer_.insert(chunk);
        ++measured_.peer_evicted_chunks;
        measured_.bytes_to_peer += n;
        return;
      }
      const Bytes offset = reinterpret_cast<uint64_t>(p) - chunk * kBlockSize;
      measured_.policy_evicted_bytes += evict_pages(chunk, offset, offset + n);
      forget(p, n);
    });
  }

  // The first leg of a multi-path prefetch: host data goes to the neighbour while it has room.
  void stage(const policies::Range& range) {
    for_each_live_chunk(range.start, range.bytes, [&](void* p, Bytes n, uint64_t chunk) {
      if (on_peer_.count(chunk) || residency_.holds_chunk(chunk) || !peer_has_room()) return;
      device_.prefetch_to_peer(p, n);
      on_peer_.insert(chunk);
      measured_.bytes_staged += n;
    });
  }

  void evict_chunks(const std::vector<uint64_t>& victims, uint64_t& counter) {
    for (uint64_t chunk : victims) evict_pages(chunk, 0, kBlockSize);
    counter += victims.size();
  }

  // Sends a chunk's pages within [lo, hi) of it to the host, in runs, clipped to the live
  // allocations: all but the discarded ones. Not only the pages the books hold: the driver
  // brings others of a faulting block in beside them (density prefetch). Not the discarded:
  // CUDA's prefetch of a discarded page undoes the discard, bringing freed memory back.
  Bytes evict_pages(uint64_t chunk, Bytes lo, Bytes hi) {
    auto d = discarded_.find(chunk);
    const uint32_t pages = d == discarded_.end() ? ~0u : ~d->second;
    Bytes evicted = 0;
    for (unsigned first = 0; first < kBigPagesPerBlock;) {
      if (!(pages >> first & 1)) {
        ++first;
        continue;
      }
      unsigned end = first;
      while (end < kBigPagesPerBlock && (pages >> end & 1)) ++end;
      const uint64_t base = chunk * kBlockSize;
      const uint64_t from = base + std::max<Bytes>(lo, first * kBigPageSize);
      const uint64_t to = base + std::min<Bytes>(hi, end * kBigPageSize);
      auto it = by_live_.upper_bound(from);
      if (it != by_live_.begin()) --it;
      for (; from < to && it != by_live_.end() && it->first < to; ++it) {
        const uint64_t a = std::max(from, it->first), b = std::min(to, it->first + it->second.size);
        if (a >= b) continue;
        device_.evict_to_host(reinterpret_cast<void*>(a), b - a);
        evicted += b - a;
      }
      first = end;
    }
    return evicted;
  }

  void execute() {
    for (const policies::Action& a : actions_) {
      switch (a.kind) {
      case policies::ActionKind::kPrefetch:
        if (a.target == gpu_processor(0))
          prefetch(a.range);
        else if (a.target == gpu_processor(1) && peer_chunks_ > 0)
          stage(a.range);
        else
          throw SimulationError("live replay: policy " + job_.policy + " prefetched to processor " +
                                std::to_string(a.target) + ", which this replay does not have");
        break;
      case policies::ActionKind::kEvict:
        evict(a);
        break;
      case policies::ActionKind::kDiscard:
        for_each_live(a.range.start, a.range.bytes, [&](void* p, Bytes n) {
          device_.discard(p, n);
          note_discarded(reinterpret_cast<uint64_t>(p), n, true);
          forget(p, n);
          measured_.discarded_bytes += n;
        });
        break;
      case policies::ActionKind::kAdvise:
        for_each_live(a.range.start, a.range.bytes, [&](void* p, Bytes n) {
          device_.advise_remote(p, n, a.advice == policies::Advice::kAccessRemotely);
        });
        break;
      }
    }
    actions_.clear();
  }

  // Chunk by chunk, so that a prefetch larger than the room left evicts the oldest chunks (its
  // own earliest ones last), as the driver does.
  void prefetch(const policies::Range& range) {
    for_each_live(range.start, range.bytes, [&](void* p, Bytes n) {
      const auto at = reinterpret_cast<Addr>(p);
      for (Bytes done = 0; done < n;) {
        const Addr lo = at + done;
        const Bytes piece = std::min(n - done, (lo / kBlockSize + 1) * kBlockSize - lo);
        uint32_t bits = 0;
        for (Addr q = lo / kBigPageSize; q * kBigPageSize < lo + piece; ++q)
          bits |= 1u << (q % kBigPagesPerBlock);
        const std::vector<Residency::ChunkPages> chunk{{lo / kBlockSize, bits}};
        evict_chunks(residency_.make_room(chunk), measured_.budget_evicted_chunks);
        admit(chunk);
        on_peer_.erase(lo / kBlockSize);
        touched_.insert(lo / kBlockSize);
        device_.prefetch_to_gpu(reinterpret_cast<void*>(lo), piece);
        measured_.prefetch_bytes += piece;
        done += piece;
      }
    });
  }

  const ReplayJob& job_;
  LiveDevice& device_;
  Plan plan_;
  Residency residency_;
  uint64_t peer_chunks_, peer_reserve_chunks_;
  std::unordered_set<uint64_t> on_peer_; // live chunks placed on the neighbour
  std::unordered_set<uint64_t> touched_; // live chunks ever on a GPU: the others hold no data yet
  std::unordered_map<uint64_t, uint32_t> discarded_; // live chunk -> its discarded 64 KB pages
  std::unique_ptr<policies::IPolicy> policy_;
  policies::Actions actions_;
  std::map<Addr, LiveAlloc> live_; // trace address -> live
  struct LiveRange {
    Bytes size;
    Addr trace; // where the trace has it
  };
  std::map<uint64_t, LiveRange> by_live_;                   // live address -> range
  std::vector<uint64_t> slot_base_;                         // slot -> live address
  std::unordered_map<uint64_t, trace::AllocRecord> ranges_; // live allocations of the trace
  Clock clock_;
  Time last_end_ = 0;
  std::vector<Residency::ChunkPages> absent_; // the running kernel's pages off the GPU
  Measured measured_;
  std::optional<StepTotals> step_start_; // the open training step's start
  int64_t step_ = -1;
};

uint64_t budget_chunks(const ReplayJob& job, const trace::TraceStats& stats) {
  if (job.budget_bytes > 0) return std::max<uint64_t>(1, job.budget_bytes / kBlockSize);
  const double wanted = job.budget_fraction * static_cast<double>(stats.footprint_chunks);
  return std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(wanted - 1e-9)));
}

void check_memory(const ReplayJob& job, const trace::TraceStats& stats, const Plan& plan,
                  LiveDevice& device) {
  const uint64_t free = device.free_bytes();
  const uint64_t need =
      stats.peak_managed_bytes + stats.peak_device_bytes + plan.touches.size() * sizeof(Touch);
  if (need + job.margin > free) {
    throw Error("faultline replay: refusing to run " + job.trace_path + ": it needs " +
                std::to_string(need) + " bytes of managed and device memory, and the GPU has " +
                std::to_string(free) + " bytes free, less the margin of " +
                std::to_string(job.margin) + " bytes (--margin)");
  }
  if (job.peer_budget_bytes == 0) return;
  const uint64_t peer_free = device.peer_free_bytes();
  if (job.peer_budget_bytes + job.margin > peer_free) {
    throw Error("faultline replay: refusing a neighbour budget of " +
                std::to_string(job.peer_budget_bytes) + " bytes: the next GPU has " +
                std::to_string(peer_free) + " bytes free (none if there is no next GPU), less " +
                "the margin of " + std::to_string(job.margin) + " bytes (--margin)");
  }
}

nlohmann::json resolved(const ReplayJob& job, uint64_t chunks, LiveDevice& device) {
  return {{"policy", {{"name", job.policy}, {"params", job.policy_params}}},
          {"budget",
           {{"fraction_of_footprint",
             job.budget_bytes ? nlohmann::json() : nlohmann::json(job.budget_fraction)},
            {"bytes", job.budget_bytes ? nlohmann::json(job.budget_bytes) : nlohmann::json()},
            {"resolved_bytes", chunks * kBlockSize}}},
          {"margin", job.margin},
          {"faults", job.fault_source == ReplayJob::FaultSource::kBooks ? "books" : "cupti"},
          {"drain_every", job.fault_source == ReplayJob::FaultSource::kBooks
                              ? nlohmann::json()
                              : nlohmann::json(job.drain_every)},
          {"peer_budget_bytes", job.peer_budget_bytes},
          {"peer_reserve_bytes", job.peer_reserve_bytes},
          {"device", device.name()}};
}

} // namespace

nlohmann::json run_replay(const ReplayJob& job, LiveDevice& device) {
  const trace::TraceStats stats = trace::compute_stats(job.trace_path);
  Plan plan = read_plan(job.trace_path, job.iterations);
  nlohmann::json iterations = plan.iterations;
  check_memory(job, stats, plan, device);
  const uint64_t chunks = budget_chunks(job, stats);
  const uint64_t skipped = plan.skipped_accesses;
  Replay replay(job, device, std::move(plan), chunks);
  Time total = 0;
  Measured m = replay.run(total);
  const Counters c = device.counters();

  nlohmann::json out;
  out["faultline"] = {{"git_revision", git_revision()}, {"trace_format_version", trace::kVersion}};
  out["trace"] = {{"path", job.trace_path}, {"footprint_bytes", stats.footprint_bytes()}};
  out["config"] = resolved(job, chunks, device);
  if (job.iterations) out["config"]["iterations"] = job.iterations;
  out["results"] = {{"total_time_ns", total},
                    {"compute_ns", m.compute_ns},
                    {"fault_stall_ns", m.stall_ns},
                    {"kernels", m.kernels},
                    {"accesses", m.accesses},
                    {"accesses_outside_managed_memory", skipped},
                    {"faults", c.gpu_fault_records},
                    {"faults_reported_to_policy", m.reported_faults},
                    {"faults_outside_trace_memory", m.unmapped_faults},
                    {"policy_decision_ns", m.policy_ns},
                    {"bytes_host_to_gpu", c.bytes_host_to_gpu},
                    {"bytes_gpu_to_host", c.bytes_gpu_to_host},
                    {"evictions", m.budget_evicted_chunks},
                    {"policy_evicted_bytes", m.policy_evicted_bytes},
                    {"discarded_bytes", m.discarded_bytes},
                    {"prefetch", {{"issued_bytes", m.prefetch_bytes}}},
                    {"peak_gpu_chunks", replay.peak_chunks()},
                    {"peers",
                     {{"evictions_to_peer", m.peer_evicted_chunks},
                      {"bytes_to_peer", m.bytes_to_peer},
                      {"bytes_staged_on_peer", m.bytes_staged},
                      {"bytes_device_to_device", c.bytes_peer}}},
                    {"dropped_counter_records", c.dropped_records}};
  out["iterations"] = std::move(iterations);
  out["steps"] = std::move(m.steps);
  if (job.per_kernel) out["kernels"] = std::move(m.rows);
  return out;
}

} // namespace faultline::live
