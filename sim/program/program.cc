#include "sim/program/program.h"

#include "sim/core/error.h"
#include "sim/run/results.h"
#include "tracer/convert/passes.h"
#include "tracer/raw/raw_format.h"

#include <algorithm>
#include <bit>

namespace faultline::program {

Time RunClock::now() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                              start_)
      .count();
}

namespace {

// Without a budget the books still run, over the GPU's whole memory, so that the policy's view
// and the rows mean the same in every run.
uint64_t budget_chunks(const RunConfig& config, uint64_t gpu_bytes) {
  const uint64_t bytes = config.budget_bytes ? config.budget_bytes : gpu_bytes;
  return std::max<uint64_t>(1, bytes / kBlockSize);
}

uint32_t page_bits(Addr lo, Addr hi) { // the big pages of [lo, hi) inside lo's chunk
  uint32_t bits = 0;
  for (Addr q = lo / kBigPageSize; q * kBigPageSize < hi; ++q)
    bits |= 1u << (q % kBigPagesPerBlock);
  return bits;
}

} // namespace

ProgramRun::ProgramRun(RunConfig config, Device& device, uint64_t gpu_bytes, const RunClock& clock)
    : config_(std::move(config)), device_(device), clock_(clock),
      residency_(budget_chunks(config_, gpu_bytes)),
      map_(config_.trace.empty() ? std::nullopt : std::optional<AddressMap>(config_.trace)),
      traced_(config_.trace.empty() ? std::nullopt : std::optional<TraceView>(config_.trace)),
      host_(*this, config_.policy, config_.params, "run --policy " + config_.policy),
      ends_at_launch_(config_.kernel_ends == "launch") {
  if (config_.range == "profiler") { // the set-up before the range is step -1
    in_range_ = false;
    next_step_ = -1;
  }
  policies::StartEvent start;
  start.gpu_capacity = residency_.budget_chunks() * kBlockSize;
  start.trace_path = config_.trace;
  start.iterations = config_.iterations;
  host_.start(start);
  // Once, before the program's first call returns (the oracle reads its trace here): not a
  // decision at a launch, which is what policy_decision_ns over the launches prices.
  start_ns_ = decision_ns_;
  decision_ns_ = 0;
}

const std::pair<const uint64_t, ProgramRun::Allocation>* ProgramRun::find(Addr address) const {
  auto it = live_.upper_bound(address);
  if (it == live_.begin()) return nullptr;
  --it;
  return address < it->first + it->second.bytes ? &*it : nullptr;
}

template <typename F> void ProgramRun::for_each_managed(Addr start, Bytes bytes, F f) const {
  auto it = live_.upper_bound(start);
  if (it != live_.begin()) --it;
  for (; it != live_.end() && it->first < start + bytes; ++it) {
    if (!it->second.managed) continue;
    const Addr lo = std::max(start, it->first);
    const Addr hi = std::min(start + bytes, it->first + it->second.bytes);
    if (lo < hi) f(lo, hi - lo);
  }
}

template <typename F> void ProgramRun::for_each_piece(Addr start, Bytes bytes, F f) const {
  if (!map_) return for_each_managed(start, bytes, [&](Addr a, Bytes n) { f(a, a, n); });
  if (start >= kApart)
    return for_each_managed(start - kApart, bytes, [&](Addr a, Bytes n) { f(a + kApart, a, n); });
  map_->for_each_live(start, bytes, [&](Addr live, Bytes n, Addr trace) {
    for_each_managed(live, n, [&](Addr a, Bytes m) { f(trace + (a - live), a, m); });
  });
}

std::vector<host::ChunkPages> ProgramRun::chunks_of(Addr start, Bytes bytes) {
  std::vector<host::ChunkPages> out;
  for (Addr at = start, end = start + bytes; at < end;) {
    const Addr next = std::min(end, (at / kBlockSize + 1) * kBlockSize);
    out.push_back({at / kBlockSize, page_bits(at, next)});
    at = next;
  }
  return out;
}

void ProgramRun::alloc(uint64_t address, uint64_t bytes, bool managed) {
  enter();
  if (bytes == 0) return;
  const Addr seen = map_ ? map_->allocated(address, bytes, managed) : address;
  // With a trace, a segment has the trace's id, which the trace's blocks and launches name.
  const uint64_t id =
      map_ && seen != AddressMap::kNoAddress && map_->last_id() ? map_->last_id() : next_id_++;
  const Addr book = seen != AddressMap::kNoAddress ? seen : address + kApart;
  live_[address] = {id,      bytes,
                    managed, seen != AddressMap::kNoAddress,
                    book,    managed ? chunks_of(book, bytes) : std::vector<host::ChunkPages>{}};
  if (!managed) {
    device_bytes_ += bytes;
    residency_.reserve(static_cast<int64_t>((bytes + kBlockSize - 1) / kBlockSize));
  }
  trace::AllocRecord record;
  record.id = id;
  record.kind = managed ? trace::MemoryKind::kManaged : trace::MemoryKind::kDevice;
  record.address = seen;
  record.size = bytes;
  record.time = last_call_;
  if (seen != AddressMap::kNoAddress) host_.alloc(record, last_call_);
}

void ProgramRun::free(uint64_t address) {
  enter();
  auto it = live_.find(address);
  if (it == live_.end()) return; // not an allocation the run saw (made before it began)
  if (it->second.told) host_.free(it->second.id, last_call_); // the policy acts while it lives
  const Allocation a = it->second;
  live_.erase(it);
  if (map_) map_->freed(address);
  if (!a.managed) {
    device_bytes_ -= a.bytes;
    residency_.reserve(-static_cast<int64_t>((a.bytes + kBlockSize - 1) / kBlockSize));
    return;
  }
  // Its pages leave the books; a big page it shares with a live allocation stays.
  const uint64_t first = a.book / kBigPageSize;
  const uint64_t last = (a.book + a.bytes - 1) / kBigPageSize;
  for (uint64_t page = first; page <= last; ++page) {
    bool shared = false;
    if (page == first || page == last)
      for_each_piece(page * kBigPageSize, kBigPageSize, [&](Addr, Addr, Bytes) { shared = true; });
    if (!shared) residency_.remove(page, 1);
  }
}

void ProgramRun::launch(const std::string& name, const std::vector<uint64_t>& words,
                        uint64_t stream) {
  const Time t = enter();
  if (boundary_ && !raw::is_copy_name(name.c_str())) open_step(*boundary_, boundary_totals_);
  const uint64_t index = kernels_++;
  launching_ = true;
  ++totals_.kernels;
  // Every launch comes through here: the buffers are the run's, kept between launches.
  std::vector<uint64_t>& ids = launch_ids_;
  std::vector<host::ChunkPages>& needed = launch_needed_;
  ids.clear();
  needed.clear();
  named_.clear();
  // With a trace, its operation of this number: the blocks made and freed before it, the
  // allocations it named and the pages it touched. Else the allocations the arguments name.
  if (const TraceView::Operation* op = traced_ ? traced_operation(index, name) : nullptr) {
    for (const TraceView::BlockEvent& b : op->blocks_before) {
      if (b.free)
        host_.free(b.record.id, t);
      else
        host_.alloc(b.record, t);
    }
    for (const TraceView::HostTouch& h : op->host_before) host_touched(h.address, h.bytes);
    ids = op->args;
    needed = op->pages;
  } else {
    for (uint64_t word : words) {
      const auto* a = find(word);
      if (!a || std::find(named_.begin(), named_.end(), &a->second) != named_.end()) continue;
      named_.push_back(&a->second);
      if (a->second.told) ids.push_back(a->second.id);
      if (a->second.managed)
        needed.insert(needed.end(), a->second.chunks.begin(), a->second.chunks.end());
    }
  }
  host_.launch(index, name, ids, t); // the policy's actions run first, as in the replay
  // Errors name the launch where they are caught (module.cc).
  make_room(needed, [] { return std::string("the launch"); });
  Pending p{index, {}};
  const bool heard = host_.observes_faults(); // only such a policy is handed the addresses
  for (const host::ChunkPages& c : host::budget::absent(needed, residency_)) {
    totals_.faults += std::popcount(c.pages);
    for (unsigned bit = 0; heard && bit < kBigPagesPerBlock; ++bit)
      if (c.pages >> bit & 1)
        if (const Addr a = to_policy(c.chunk * kBlockSize + bit * kBigPageSize);
            a != AddressMap::kNoAddress)
          p.absent.push_back(a);
  }
  admit(needed);
  pending_.push_back(std::move(p));
  // Every stream's next launch waits for the evictions and discards made since it last waited: a
  // kernel on another stream could otherwise write a block before its discard lands.
  uint64_t& waited = stream_waited_[stream];
  if (waited != migrations_) device_.order_before(stream);
  waited = migrations_;
  launching_ = false;
}

// The policy's picture of the program (which allocator blocks are free, what comes next) is the
// trace's: a launch the trace does not have at its number would have it discard or evict the
// program's live data on a stale picture, so the run stops there.
const TraceView::Operation* ProgramRun::traced_operation(uint64_t index, const std::string& name) {
  const TraceView::Operation* op = traced_->operation(index);
  const auto differs = [&](const std::string& how) {
    return Error(how + ": the trace is not of this program as it runs (capture it as it runs here, "
                       "with as many steps)");
  };
  if (!op) throw differs("the trace has " + std::to_string(traced_->operations()) + " operations");
  auto it = trace_names_.find(name);
  if (it == trace_names_.end()) it = trace_names_.emplace(name, capture::demangle(name)).first;
  if (it->second != op->name)
    throw differs("the trace's operation #" + std::to_string(index) + " is " + op->name);
  return op;
}

// A call after a launch finds its kernel on its stream (the library records its event as the
// launch returns), so what the policy does at that kernel's end can be ordered after it.
Time ProgramRun::enter() {
  last_call_ = now();
  if (ends_at_launch_) end_kernels(kernels_);
  return last_call_;
}

void ProgramRun::kernels_done(uint64_t count) {
  if (!ends_at_launch_) end_kernels(count);
}

void ProgramRun::end_kernels(uint64_t count) {
  while (!pending_.empty() && pending_.front().kernel < count) {
    const Pending p = std::move(pending_.front());
    pending_.pop_front();
    const Time t = now();
    if (host_.observes_faults() && !p.absent.empty()) {
      host_.kernel_faults(0, p.absent, t);
      totals_.reported_faults += static_cast<int64_t>(p.absent.size());
    }
    host_.kernel_end(p.kernel, t);
  }
}

void ProgramRun::synced() {
  enter();
  const uint64_t used = device_.used_bytes();
  if (!gpu_used_known_) return; // before the first launch: nothing of the run's yet
  const uint64_t others = gpu_used_at_start_ + device_bytes_ - device_bytes_at_start_;
  const uint64_t resident = used > others ? used - others : 0;
  step_gpu_peak_ = std::max(step_gpu_peak_, resident);
  gpu_peak_ = std::max(gpu_peak_, resident);
}

void ProgramRun::step() {
  enter();
  if (!in_range_) return;
  // A boundary begins a step only when a kernel follows it; until then the open step goes on.
  if (!step_open_ || totals_.kernels > step_base_.kernels) {
    boundary_ = last_call_;
    boundary_totals_ = totals_;
    boundary_is_start_ = false;
  }
}

// With range "all" a range changes nothing but marks a step at its start, as the capture counts
// them; with "profiler", Stop ends the last step, and what follows belongs to no row.
void ProgramRun::range(bool on) {
  enter();
  if (config_.range != "profiler") {
    if (on) step();
    return;
  }
  if (!on) {
    if (step_open_) close_step(last_call_, totals_);
    boundary_.reset();
    in_range_ = false;
    return;
  }
  if (!in_range_ && step_ < 0) next_step_ = 0; // the set-up ends
  in_range_ = true;
  step();
}

void ProgramRun::open_step(Time at, const Totals& base) {
  if (step_open_) close_step(at, base);
  boundary_.reset();
  step_open_ = true;
  step_start_ = at;
  step_base_ = base;
  step_peak_chunks_ = residency_.resident_chunks();
  step_gpu_peak_ = 0;
  step_migration_base_ = device_.migration_gpu_ns();
  if (!gpu_used_known_) { // the first kernel: what the GPU holds before the run's data
    gpu_used_at_start_ = device_.used_bytes();
    device_bytes_at_start_ = device_bytes_; // in the GPU's count already
    gpu_used_known_ = true;
  }
  // What runs before the first mark is the set-up, step -1, as the capture numbers it.
  step_ = boundary_is_start_ ? -1 : next_step_++;
  boundary_is_start_ = false;
  if (step_ >= 0) host_.step_begin(static_cast<uint64_t>(step_), now());
}

void ProgramRun::close_step(Time at, const Totals& end) {
  StepResult row;
  row.step = step_;
  row.start_ns = step_start_;
  row.end_ns = at;
  row.time_ns = at - step_start_;
  row.kernels = end.kernels - step_base_.kernels;
  row.faults = end.faults - step_base_.faults;
  row.faults_reported_to_policy = end.reported_faults - step_base_.reported_faults;
  row.bytes_host_to_gpu = (end.faults - step_base_.faults) * static_cast<int64_t>(kBigPageSize) +
                          end.prefetch_bytes - step_base_.prefetch_bytes;
  row.bytes_gpu_to_host = end.evicted_bytes - step_base_.evicted_bytes;
  row.evictions = end.evictions - step_base_.evictions;
  row.prefetch_issued_bytes = end.prefetch_bytes - step_base_.prefetch_bytes;
  row.discarded_bytes = end.discarded_bytes - step_base_.discarded_bytes;
  row.peak_resident_bytes = static_cast<int64_t>(step_peak_chunks_ * kBlockSize);
  if (gpu_used_known_) row.gpu_used_peak_bytes = static_cast<int64_t>(step_gpu_peak_);
  // As of the call that closes the step: runs of migrations the GPU has not done yet count in
  // the next step.
  row.migration_gpu_ns = static_cast<int64_t>(device_.migration_gpu_ns() - step_migration_base_);
  steps_.push_back(step_json(row));
  step_open_ = false;
}

nlohmann::json ProgramRun::finish() {
  end_kernels(kernels_);
  if (step_open_) close_step(last_call_, totals_);
  RunTotals t;
  t.total_time_ns = last_call_;
  t.kernels = totals_.kernels;
  t.faults = totals_.faults;
  t.faults_reported_to_policy = totals_.reported_faults;
  t.bytes_host_to_gpu =
      totals_.faults * static_cast<int64_t>(kBigPageSize) + totals_.prefetch_bytes;
  t.bytes_gpu_to_host = totals_.evicted_bytes;
  t.evictions = totals_.evictions;
  t.policy_evicted_bytes = totals_.policy_evicted_bytes;
  t.discarded_bytes = totals_.discarded_bytes;
  t.prefetch_issued_bytes = totals_.prefetch_bytes;
  t.peak_gpu_chunks = static_cast<int64_t>(residency_.peak_chunks());
  t.policy_decision_ns = decision_ns_;
  t.migration_gpu_ns = static_cast<int64_t>(device_.migration_gpu_ns());
  nlohmann::json out;
  out["config"] = to_json(config_);
  out["config"]["budget_chunks"] = residency_.budget_chunks();
  // What the budget counted a launch to need: the trace's pages, or the allocations it names.
  out["config"]["books"] = traced_ ? "trace" : "arguments";
  out["results"] = totals_json(t);
  if (gpu_used_known_) out["results"]["gpu_used_peak_bytes"] = gpu_peak_;
  out["results"]["policy_start_ns"] = start_ns_;
  out["steps"] = steps_;
  return out;
}

// ---- what executes the policy's actions ---------------------------------------------------

// A victim's bytes are the big pages the books held of it: what moves to the host.
template <typename F>
void ProgramRun::make_room(const std::vector<host::ChunkPages>& needed, const F& what) {
  std::vector<uint32_t> pages;
  const std::vector<uint64_t> victims = residency_.make_room(needed, what, &pages);
  for (size_t i = 0; i < victims.size(); ++i) {
    evict_range(victims[i] * kBlockSize, kBlockSize);
    totals_.evicted_bytes += static_cast<int64_t>(std::popcount(pages[i]) * kBigPageSize);
    ++totals_.evictions;
  }
}

void ProgramRun::evict_range(Addr start, Bytes bytes) {
  for_each_piece(start, bytes, [&](Addr, Addr live, Bytes n) { evict_piece(live, n); });
}

void ProgramRun::evict_piece(Addr live, Bytes bytes) {
  after_launched();
  device_.evict_to_host(live, bytes);
  ++migrations_;
}

// Whole big pages leave the books; one the range covers only in part stays counted (the
// budget's safe side). Returns how many of them the books held: what moves to the host.
uint64_t ProgramRun::leave_books(Addr book, Bytes bytes) {
  const uint64_t first = (book + kBigPageSize - 1) / kBigPageSize,
                 end = (book + bytes) / kBigPageSize;
  uint64_t held = 0;
  for (uint64_t p = first; p < end; ++p) held += residency_.resident(p);
  if (held > 0) residency_.remove(first, end - first);
  return held;
}

// The host touched the range (trace addresses) since the last launch: the driver moved its
// GPU-resident pages back on the CPU's faults, which count as moved to the host.
void ProgramRun::host_touched(Addr start, Bytes bytes) {
  totals_.evicted_bytes += static_cast<int64_t>(leave_books(start, bytes) * kBigPageSize);
}

// Inside a launch's call its kernel is not on its stream yet: the kernels before it are.
void ProgramRun::after_launched() {
  const uint64_t launched = launching_ ? kernels_ - 1 : kernels_;
  if (ordered_after_ == launched) return;
  device_.order_after_launched();
  ordered_after_ = launched;
}

void ProgramRun::admit(const std::vector<host::ChunkPages>& pages) {
  residency_.admit(pages);
  step_peak_chunks_ = std::max(step_peak_chunks_, residency_.resident_chunks());
}

Bytes ProgramRun::free_bytes(unsigned gpu) const {
  if (gpu != 0) return 0;
  const uint64_t room = residency_.available_chunks(), used = residency_.resident_chunks();
  return room > used ? (room - used) * kBlockSize : 0;
}

ProcessorId ProgramRun::holder(Addr address) const {
  bool held = false; // by a live managed allocation
  for_each_piece(address, 1, [&](Addr, Addr, Bytes) { held = true; });
  if (!held) return kNoProcessor;
  return residency_.holds(address / kBlockSize) ? gpu_processor(0) : kHost;
}

std::vector<Addr> ProgramRun::oldest_blocks(unsigned gpu, size_t n) const {
  std::vector<Addr> out;
  if (gpu != 0) return out;
  for (uint64_t chunk : residency_.oldest(n))
    if (const Addr a = to_policy(chunk * kBlockSize); a != AddressMap::kNoAddress) out.push_back(a);
  return out;
}

// Chunk by chunk, so that a prefetch larger than the room left evicts the oldest chunks (its own
// earliest ones last), as the driver does.
void ProgramRun::prefetch(const policies::Range& range, Time) {
  for_each_piece(range.start, range.bytes, [&](Addr book, Addr live, Bytes n) {
    for (const host::ChunkPages& c : chunks_of(book, n)) {
      const Addr lo = std::max(book, c.chunk * kBlockSize);
      const Addr hi = std::min(book + n, (c.chunk + 1) * kBlockSize);
      // Pages the books hold move nothing: the call is left out, as the simulator counts it.
      uint64_t moving = 0;
      for (const host::ChunkPages& a : host::budget::absent({c}, residency_))
        moving += std::popcount(a.pages);
      if (moving == 0) continue;
      make_room({c}, [] { return std::string("a prefetch"); });
      admit({c});
      device_.prefetch_to_gpu(live + (lo - book), hi - lo);
      totals_.prefetch_bytes += static_cast<int64_t>(moving * kBigPageSize);
    }
  });
}

// One GPU: the policy host refuses a neighbour target before it gets here.
void ProgramRun::stage(const policies::Range&, unsigned, Time) {}

// The call covers the range whatever the books say; the bytes counted are the pages the books
// held of it (the simulator counts what moves).
void ProgramRun::evict(const policies::Range& range, ProcessorId, Time) {
  for_each_piece(range.start, range.bytes, [&](Addr book, Addr live, Bytes n) {
    evict_piece(live, n);
    const auto moved = static_cast<int64_t>(leave_books(book, n) * kBigPageSize);
    totals_.policy_evicted_bytes += moved;
    totals_.evicted_bytes += moved;
  });
}

void ProgramRun::discard(const policies::Range& range, Time) {
  for_each_piece(range.start, range.bytes, [&](Addr book, Addr live, Bytes n) {
    after_launched(); // the kernels launched before read the data yet
    device_.discard(live, n);
    ++migrations_; // and the next launch may write it anew
    totals_.discarded_bytes += static_cast<int64_t>(n);
    leave_books(book, n);
  });
}

void ProgramRun::advise(const policies::Range& range, policies::Advice advice, Time) {
  for_each_piece(range.start, range.bytes, [&](Addr, Addr live, Bytes n) {
    device_.advise_remote(live, n, advice == policies::Advice::kAccessRemotely);
  });
}

void ProgramRun::deciding(bool started) {
  if (started)
    decision_start_ = now();
  else
    decision_ns_ += now() - decision_start_;
}

} // namespace faultline::program
