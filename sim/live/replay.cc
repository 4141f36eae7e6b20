#include "sim/live/replay.h"

#include "sim/core/error.h"
#include "sim/host/policy_host.h"
#include "sim/live/books.h"
#include "sim/live/measured.h"
#include "sim/live/plan.h"
#include "sim/live/replay_setup.h"
#include "sim/run/results.h"
#include "sim/trace/chunks.h"
#include "sim/trace/inspect.h"
#include "sim/trace/step_repeater.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace faultline::live {
namespace {

// The replay is the live backend of the policy host (sim/host/policy_host.h): the host makes
// the policy's events from the plan's records, the replay executes its actions on the GPU and
// answers its view of memory from the books.
class Replay : public host::Backend {
public:
  Replay(const ReplayRequest& request, LiveDevice& device, Plan plan, uint64_t budget_chunks)
      : request_(request), device_(device), plan_(std::move(plan)),
        books_(budget_chunks, request.peer_budget_bytes / kBlockSize,
               (request.peer_reserve_bytes + kBlockSize - 1) / kBlockSize),
        host_(*this, request.policy, request.policy_params, "replay --policy " + request.policy) {}

  Measured run(Time& total_ns) {
    clock_.pause(); // setup, not replay
    if (!plan_.touches.empty() &&
        !device_.upload_touches(plan_.touches.data(), plan_.touches.size()))
      fail("uploading the kernels' touches");
    clock_.resume();
    policies::StartEvent start;
    start.gpu_capacity = books_.residency().budget_chunks() * kBlockSize;
    start.trace_path = request_.trace_path;
    start.iterations = request_.iterations;
    if (books_.has_peer()) {
      start.gpus = 2;
      start.nvlink_peers = {1};
    }
    host_.start(start);
    size_t next_training_step = 0;
    // An issue-time trace's records follow the CPU's own gaps, counted from the previous
    // record's issue (a kernel's launch: the replay's wait for it is the replay's own cost).
    const bool issue = plan_.timeline == trace::Timeline::kIssue;
    for (size_t i = 0; i < plan_.steps.size(); ++i) {
      const Step& step = plan_.steps[i];
      // As in the simulator, the host time before a step's first record belongs to the step
      // before it.
      clock_.wait_until((issue ? cpu_free_ : last_end_) + step.gap);
      for (; next_training_step < plan_.training_steps.size() &&
             plan_.training_steps[next_training_step].at == i;
           ++next_training_step)
        begin_step(plan_.training_steps[next_training_step].step);
      if (step.type == trace::RecordType::kAlloc) alloc(step.alloc);
      if (step.type == trace::RecordType::kFree) free(step.id);
      if (step.type == trace::RecordType::kHostAccess) host_access(step.host);
      if (step.type != trace::RecordType::kKernel) cpu_free_ = now();
      if (step.type == trace::RecordType::kKernel) kernel(step.kernel);
    }
    clock_.pause();
    device_.quiesce();
    total_ns = clock_.elapsed();
    for (; next_training_step < plan_.training_steps.size(); ++next_training_step)
      begin_step(plan_.training_steps[next_training_step].step, total_ns); // steps without work
    if (step_start_) close_step(total_ns);
    for (void* p : books_.live_pointers()) device_.free_managed(p);
    return std::move(measured_);
  }

  uint64_t peak_chunks() const { return books_.residency().peak_chunks(); }
  uint32_t plan_version() const { return plan_.version; }
  trace::Timeline plan_timeline() const { return plan_.timeline; }

  // host::Backend
  Bytes free_bytes(unsigned gpu) const override { return books_.free_bytes(gpu); }
  ProcessorId holder(Addr address) const override { return books_.holder(address); }
  std::vector<Addr> oldest_blocks(unsigned gpu, size_t n) const override {
    return books_.oldest_blocks(gpu, n);
  }
  void prefetch(const policies::Range& range, Time now) override;
  void stage(const policies::Range& range, unsigned peer, Time now) override;
  void evict(const policies::Range& range, ProcessorId target, Time now) override;
  void discard(const policies::Range& range, Time now) override;
  void advise(const policies::Range& range, policies::Advice advice, Time now) override;
  // A policy's decision is not timed: the simulator charges none, and a real implementation
  // (DeepUM's driver thread) decides beside the GPU's work. Its time is reported on its own.
  void deciding(bool started) override {
    if (started) {
      pause_for_decision_ = !clock_.paused();
      if (pause_for_decision_) clock_.pause();
      decision_start_ = Clock::now();
      return;
    }
    measured_.policy_ns += Clock::now() - decision_start_;
    if (pause_for_decision_) clock_.resume();
  }

private:
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
    step_start_ = step_start_ ? StepMark(at, measured_, device_.counters())
                              : StepMark(0, Measured{}, Counters{});
    step_ = step;
    if (step >= 0 && !paused) host_.step_begin(static_cast<uint64_t>(step), now());
  }

  void close_step(Time end) {
    const StepMark totals(end, measured_, device_.counters());
    measured_.steps.push_back(step_json(totals.row_since(*step_start_, step_, request_.counters)));
  }

  void alloc(const trace::AllocRecord& a) {
    if (a.kind == trace::MemoryKind::kDevice)
      books_.residency().reserve(static_cast<int64_t>(device_chunks_.add(a.address, a.size, +1)));
    if (a.kind == trace::MemoryKind::kManaged) {
      clock_.pause(); // the simulator counts allocation as free
      void* p = device_.alloc_managed(a.size);
      if (!p) fail("allocating " + std::to_string(a.size) + " managed bytes");
      const uint32_t slot = plan_.slots.at(a.id);
      device_.set_slot(slot, p, a.size);
      books_.add(a.address, a.size, slot, p);
      clock_.resume();
    }
    host_.alloc(a, now());
  }

  void free(uint64_t id) {
    if (!host_.live().count(id)) return;
    const trace::AllocRecord a = host_.free(id, now()); // the policy acts on it while it lives
    if (a.kind == trace::MemoryKind::kDevice)
      books_.residency().reserve(-static_cast<int64_t>(device_chunks_.add(a.address, a.size, -1)));
    if (a.kind != trace::MemoryKind::kManaged) return;
    void* live = books_.remove(a.address);
    if (!live) return;
    device_.synchronize(); // migrations still running are the replay's time, as cudaFree waits
    clock_.pause();
    device_.free_managed(live);
    clock_.resume();
  }

  // The host touches managed memory (one byte a 4 KB page), timed: its pages on the GPU come
  // back, and pages no processor holds are populated on the host (CPU faults either way).
  void host_access(const trace::HostAccessRecord& h) {
    books_.for_each_live_chunk(h.address, h.size, [&](void* p, Bytes n, uint64_t chunk) {
      device_.host_write(p, n);
      books_.forget(p, n);
      books_.host_wrote(chunk);
    });
  }

  void kernel(uint64_t index) {
    const Kernel& k = plan_.kernels[index];
    kernel_ = index;
    const Time start = now(); // what runs from here to the kernel's end is its span
    cpu_free_ = start;
    host_.launch(index, k.name, k.args, start);
    const auto what = [&] { return "kernel #" + std::to_string(index) + " (" + k.name + ")"; };
    const std::vector<host::ChunkPages> whole = books_.live_chunks(plan_, k);
    const std::vector<size_t> parts = parts_of(k, whole, what);
    absent_.clear();
    Time part_start = start; // the first part's row holds the launch, as a whole kernel's does
    for (size_t i = 0; i < parts.size(); ++i) {
      const size_t first = parts[i], end = i + 1 < parts.size() ? parts[i + 1] : k.count;
      const std::vector<host::ChunkPages> chunks =
          parts.size() == 1
              ? whole
              : host::group_by_chunk(books_.live_pages(plan_, k.first + first, end - first));
      const Time compute = run_part(k, chunks, first, end, what);
      last_end_ = now();
      record(index, k, part_start, compute, end - first);
      part_start = last_end_;
    }
    if (host_.observes_faults()) report_faults(index);
    host_.kernel_end(index, last_end_);
  }

  // Where the kernel, whose pages are `whole`, is cut when they need more chunks than the
  // budget leaves: {0} when they fit (host::budget::parts, the simulator's rule too). Cheap in
  // the common case, which runs on the clock.
  template <typename F>
  std::vector<size_t> parts_of(const Kernel& k, const std::vector<host::ChunkPages>& whole,
                               const F& what) const {
    const uint64_t room = books_.residency().room_chunks();
    if (whole.size() <= room) return {0};
    std::unordered_set<uint64_t> chunks;
    for (const host::ChunkPages& c : whole) chunks.insert(c.chunk);
    if (chunks.size() <= room) return {0};
    std::vector<uint64_t> chunk_of_touch = books_.live_pages(plan_, k.first, k.count);
    for (uint64_t& page : chunk_of_touch) page /= kBigPagesPerBlock;
    return host::budget::parts(chunk_of_touch, room, what);
  }

  // Touches [first, end) of the kernel, whose pages are `chunks`: room made, then run for their
  // share of its compute time, which it returns.
  template <typename F>
  Time run_part(const Kernel& k, const std::vector<host::ChunkPages>& chunks, size_t first,
                size_t end, const F& what) {
    make_room(chunks, what);
    if (host_.observes_faults() && request_.fault_source == ReplayRequest::FaultSource::kBooks) {
      const std::vector<host::ChunkPages> absent = host::budget::absent(chunks, books_.residency());
      absent_.insert(absent_.end(), absent.begin(), absent.end());
    }
    books_.arrive(chunks);
    const Time duration = host::budget::part_duration(k.duration, first, end, k.count);
    if (!device_.run_kernel(k.first + first, end - first, static_cast<uint64_t>(duration)))
      fail("running " + what());
    copy_wait_ += static_cast<Time>(device_.last_copy_wait_ns());
    if (request_.drain_counters || request_.eviction_bytes) untimed([&] { device_.quiesce(); });
    return duration;
  }

  // The kernel's faults, at trace addresses, to the policy: from the books, or CUPTI's records
  // since the last drain (records outside the trace's memory are counted and dropped). Listing
  // them is the replay's bookkeeping and deciding is the policy's, both off the clock; issuing
  // the actions is on it, as in the simulator: a migration call blocks the CPU for much of its
  // copy, and leaving that off the clock made pre-eviction look free
  // (experiments/multigpu/README.md).
  void report_faults(uint64_t index) {
    clock_.pause(); // the GPU is idle: the kernel waited for every migration issued before it
    const std::optional<std::vector<Addr>> faults = faults_of(index);
    clock_.resume();
    if (!faults) return;
    const Time start = now();
    host_.kernel_faults(0, *faults, last_end_);
    measured_.fault_actions_ns += now() - start;
  }

  // The kernel's faults, or none when CUPTI's records are not drained after this kernel.
  std::optional<std::vector<Addr>> faults_of(uint64_t index) {
    std::vector<Addr> faults;
    if (request_.fault_source == ReplayRequest::FaultSource::kBooks) {
      for (const host::ChunkPages& c : absent_)
        for (unsigned p = 0; p < kBigPagesPerBlock; ++p)
          if (c.pages >> p & 1)
            faults.push_back(books_.to_trace(c.chunk * kBlockSize + p * kBigPageSize));
    } else {
      if ((index + 1) % request_.drain_every != 0) return std::nullopt;
      device_.quiesce();
      uint64_t addresses[256];
      for (uint64_t n; (n = device_.take_faults(addresses, 256)) > 0;)
        faults.insert(faults.end(), addresses, addresses + n);
      for (Addr& a : faults) a = books_.to_trace(a);
    }
    const auto outside = std::erase(faults, Books::kNoAddress);
    measured_.unmapped_faults += outside;
    measured_.reported_faults += faults.size();
    if (request_.per_kernel) measured_.rows.back()["faults_reported"] = faults.size();
    for (Addr& a : faults) a = a / kBigPageSize * kBigPageSize; // as the driver reports them
    return faults;
  }

  // A kernel, or a part of one, ran from `start` to last_end_: `accesses` touches for
  // `compute` of recorded time.
  void record(uint64_t index, const Kernel& k, Time start, Time compute, uint64_t accesses) {
    const Time span = last_end_ - start;
    measured_.kernels++;
    measured_.accesses += accesses;
    measured_.compute_ns += compute;
    measured_.stall_ns += std::max<Time>(0, span - compute);
    measured_.copy_wait_ns += copy_wait_;
    const Time copy_wait = std::exchange(copy_wait_, 0);
    const MigrationCalls calls = std::exchange(calls_, MigrationCalls{});
    if (!request_.per_kernel) return;
    measured_.rows.push_back({{"index", index},
                              {"name", k.name},
                              {"start_ns", start},
                              {"end_ns", last_end_},
                              {"gpu_ns", span},
                              {"compute_ns", compute},
                              {"stall_ns", std::max<Time>(0, span - compute)},
                              {"copy_wait_ns", copy_wait},
                              {"accesses", accesses}});
    calls.add_to(measured_.rows.back());
  }

  Time now() const { return clock_.elapsed(); }

  // Evicts the oldest chunks not in `needed` until those fit the budget.
  template <typename F> void make_room(const std::vector<host::ChunkPages>& needed, const F& what) {
    std::vector<uint32_t> pages;
    const std::vector<uint64_t> victims = books_.residency().make_room(needed, what, &pages);
    for (size_t i = 0; i < victims.size(); ++i) {
      if (!request_.eviction_bytes) {
        evict_pages(victims[i], 0, kBlockSize);
        continue;
      }
      const uint64_t before = untimed([&] { return drained_bytes_to_host(); });
      evict_pages(victims[i], 0, kBlockSize);
      const uint64_t after = untimed([&] { return drained_bytes_to_host(); });
      measured_.evictions.push_back({{"kernel", kernel_},
                                     {"for", what()},
                                     {"chunk", books_.to_trace(victims[i] * kBlockSize)},
                                     {"pages_held", std::popcount(pages[i])},
                                     {"bytes_to_host", after - before}});
    }
    measured_.budget_evicted_chunks += victims.size();
  }

  // The bytes CUPTI has counted back to the host, once every record so far is in.
  uint64_t drained_bytes_to_host() {
    device_.quiesce();
    return device_.counters().bytes_gpu_to_host;
  }

  // f() off the clock, whether or not it runs now; returns what f returns.
  template <typename F> auto untimed(const F& f) {
    const bool running = !clock_.paused();
    if (running) clock_.pause();
    struct Resume { // on every way out, a void f's too
      Clock& clock;
      bool running;
      ~Resume() {
        if (running) clock.resume();
      }
    } resume{clock_, running};
    return f();
  }

  // A migration call, counted in the kernel's row and, for ReplayRequest::call_log, logged.
  template <typename F>
  void issue(MigrationCalls::Kind& kind, char letter, void* p, Bytes n, F&& call) {
    if (request_.call_log.empty()) return calls_.issued(kind, n, call);
    const Time start = now();
    calls_.issued(kind, n, call);
    measured_.call_log.push_back(
        {kernel_, letter, books_.to_trace(reinterpret_cast<uint64_t>(p)), n, start, now() - start});
  }

  Bytes evict_pages(uint64_t chunk, Bytes lo, Bytes hi) {
    Bytes evicted = 0;
    for (const auto& run : books_.eviction_runs(chunk, lo, hi)) {
      void* const p = run.first;
      const Bytes n = run.second;
      issue(calls_.to_host, 'e', p, n, [&] { device_.evict_to_host(p, n); });
      evicted += n;
    }
    return evicted;
  }

  const ReplayRequest& request_;
  LiveDevice& device_;
  Plan plan_;
  Books books_;
  trace::SharedChunks device_chunks_; // as the simulator counts device memory
  host::PolicyHost host_;
  Clock clock_;
  Time last_end_ = 0;
  Time cpu_free_ = 0; // issue-time traces: when the CPU issued the previous record
  // The running kernel's parts' waits for copies (LiveDevice::last_copy_wait_ns).
  Time copy_wait_ = 0;
  MigrationCalls calls_; // issued since the last row
  bool pause_for_decision_ = false;
  Time decision_start_ = 0;
  std::vector<host::ChunkPages> absent_; // the running kernel's pages off the GPU
  Measured measured_;
  std::optional<StepMark> step_start_; // the open training step's start
  int64_t step_ = -1;
  int64_t kernel_ = -1; // the running or last kernel
};

// An eviction to the neighbour, chunk by chunk while it has room; the rest to the host.
void Replay::evict(const policies::Range& range, ProcessorId target, Time) {
  books_.for_each_live_chunk(range.start, range.bytes, [&](void* p, Bytes n, uint64_t chunk) {
    if (target != kHost && !books_.on_peer(chunk) && books_.residency().holds(chunk) &&
        books_.peer_has_room()) {
      issue(calls_.to_peer, 'p', p, n, [&] { device_.prefetch_to_peer(p, n); });
      books_.forget(p, n);
      books_.placed_on_peer(chunk);
      ++measured_.peer_evicted_chunks;
      measured_.bytes_to_peer += n;
      return;
    }
    const Bytes offset = reinterpret_cast<uint64_t>(p) - chunk * kBlockSize;
    measured_.policy_evicted_bytes += evict_pages(chunk, offset, offset + n);
    books_.forget(p, n);
  });
}

// The first leg of a multi-path prefetch: host data goes to the neighbour while it has room.
void Replay::stage(const policies::Range& range, unsigned, Time) {
  books_.for_each_live_chunk(range.start, range.bytes, [&](void* p, Bytes n, uint64_t chunk) {
    if (books_.on_peer(chunk) || books_.residency().holds(chunk) || !books_.peer_has_room()) return;
    issue(calls_.to_peer, 'p', p, n, [&] { device_.prefetch_to_peer(p, n); });
    books_.placed_on_peer(chunk);
    measured_.bytes_staged += n;
  });
}

void Replay::discard(const policies::Range& range, Time) {
  books_.for_each_live(range.start, range.bytes, [&](void* p, Bytes n) {
    issue(calls_.discards, 'd', p, n, [&] { device_.discard(p, n); });
    books_.note_discarded(reinterpret_cast<uint64_t>(p), n, true);
    books_.forget(p, n);
    measured_.discarded_bytes += n;
  });
}

void Replay::advise(const policies::Range& range, policies::Advice advice, Time) {
  books_.for_each_live(range.start, range.bytes, [&](void* p, Bytes n) {
    device_.advise_remote(p, n, advice == policies::Advice::kAccessRemotely);
  });
}

// Chunk by chunk, so that a prefetch larger than the room left evicts the oldest chunks (its
// own earliest ones last), as the driver does.
void Replay::prefetch(const policies::Range& range, Time) {
  books_.for_each_live_chunk(range.start, range.bytes, [&](void* p, Bytes n, uint64_t chunk) {
    const auto lo = reinterpret_cast<Addr>(p);
    uint32_t bits = 0;
    for (Addr q = lo / kBigPageSize; q * kBigPageSize < lo + n; ++q)
      bits |= 1u << (q % kBigPagesPerBlock);
    const std::vector<host::ChunkPages> pages{{chunk, bits}};
    const bool held = (books_.residency().resident_pages(chunk) & bits) == bits;
    make_room(pages, [] { return std::string("a prefetch"); });
    books_.arrive(pages);
    issue(held ? calls_.to_gpu_held : calls_.to_gpu, held ? 'h' : 'm', p, n,
          [&] { device_.prefetch_to_gpu(p, n); });
    measured_.prefetch_bytes += n;
  });
}

} // namespace

nlohmann::json run_replay(const ReplayRequest& request, LiveDevice& device) {
  const char* records = std::getenv("FAULTLINE_LIVE_FAULT_RECORDS");
  if (request.fault_source == ReplayRequest::FaultSource::kCupti && records &&
      std::string(records) == "0")
    throw Error("faultline replay: --faults cupti needs CUPTI's fault records, which "
                "FAULTLINE_LIVE_FAULT_RECORDS=0 leaves out");
  if (!request.counters && (request.fault_source == ReplayRequest::FaultSource::kCupti ||
                            request.eviction_bytes || request.drain_counters))
    throw UsageError("faultline replay: --faults cupti, --eviction-bytes and --drain-counters "
                     "read CUPTI's counters, which this run leaves off (--counters turns them on)");
  const trace::TraceStats stats = trace::compute_stats(request.trace_path);
  Plan plan = read_plan(request.trace_path, request.iterations);
  nlohmann::json iterations = plan.iterations;
  check_memory(request, stats, plan, device);
  const uint64_t chunks = budget_chunks(request, stats);
  const uint64_t skipped = plan.skipped_accesses;
  std::ofstream call_log =
      request.call_log.empty() ? std::ofstream() : open_call_log(request.call_log);
  Replay replay(request, device, std::move(plan), chunks);
  Time total = 0;
  Measured m = replay.run(total);
  const Counters c = device.counters();

  nlohmann::json out;
  out["backend"] = "replay";
  out["faultline"] = {{"git_revision", git_revision()}, {"trace_format_version", trace::kVersion}};
  out["trace"] = {{"path", request.trace_path},
                  {"format_version", replay.plan_version()},
                  {"timeline", trace::to_string(replay.plan_timeline())},
                  {"footprint_bytes", stats.footprint_bytes()}};
  out["config"] = resolved_config(request, chunks, device);
  if (request.iterations) out["config"]["iterations"] = request.iterations;
  out["results"] =
      totals_json(totals_of(m, c, request.counters, total, skipped, replay.peak_chunks()));
  out["iterations"] = std::move(iterations);
  out["steps"] = std::move(m.steps);
  if (request.per_kernel) out["kernels"] = std::move(m.rows);
  if (request.eviction_bytes) out["evictions"] = std::move(m.evictions);
  if (!request.call_log.empty()) write_call_log(call_log, request.call_log, m.call_log);
  return out;
}

} // namespace faultline::live
