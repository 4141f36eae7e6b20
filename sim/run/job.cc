#include "sim/run/job.h"

#include "sim/core/error.h"
#include "sim/host/budget.h"
#include "sim/run/issue.h"

#include <algorithm>

namespace faultline {
namespace {

enum HostEvent : uint32_t { kStep, kNextPart, kGpuNext };

// Whether the job's prefetches wait in the driver's queue behind faults: as the config says, or
// as the policy's system runs them. The budget modes (the replay's, the run's) never queue them.
bool queues_prefetches(const config::RunConfig& c, const host::PolicyHost& host) {
  using T = config::PrefetchTiming;
  if (c.capacity_mode != config::RunConfig::CapacityMode::kDriver) return false;
  return c.driver.prefetch_queue == T::kBehindFaults ||
         (c.driver.prefetch_queue == T::kPolicy && host.prefetches_behind_faults());
}

// Each job's addresses sit in their own 256 TB window of the shared memory model; recorded
// CUDA addresses are below 2^47.
constexpr unsigned kAddressSpaceBits = 48;

} // namespace

Job::Job(Machine m, JobSetup setup)
    : config_(m.config), engine_(m.engine), memory_(m.memory), topology_(m.topology),
      setup_(std::move(setup)), offset_(Addr{setup_.index} << kAddressSpaceBits),
      gpu_profile_(m.spec.gpus.at(setup_.gpu).profile),
      reader_(std::make_unique<trace::StepRepeater>(setup_.trace_path, setup_.iterations)),
      migrator_(memory_, topology_, gpu_profile_, config_.driver, stats_),
      servicer_(engine_, memory_, migrator_, setup_.gpu, gpu_profile_, config_.driver, stats_),
      runner_(engine_, memory_, servicer_, migrator_,
              topology_.route(kHost, gpu_processor(setup_.gpu)), setup_.gpu, gpu_profile_, config_,
              stats_),
      host_(*this, setup_.policy, setup_.policy_params,
            setup_.index == 0
                ? "run config $.policy"
                : "run config $.neighbour_jobs[" + std::to_string(setup_.index - 1) + "].policy"),
      prefetch_queue_(queues_prefetches(config_, host_)
                          ? std::make_unique<PrefetchQueue>(
                                engine_, memory_, migrator_,
                                topology_.route(kHost, gpu_processor(setup_.gpu)), setup_.gpu)
                          : nullptr),
      capacity_(make_capacity_keeper(config_.capacity_mode,
                                     {memory_, migrator_, host_, gpu_profile_, setup_.gpu, offset_,
                                      prefetch_queue_.get(), &stats_})) {
  run_ahead_ = reader_->timeline() == trace::Timeline::kIssue;
  serial_kernels_ = config_.capacity_mode == config::RunConfig::CapacityMode::kBudget;
  policy_at_gpu_turn_ = config_.capacity_mode == config::RunConfig::CapacityMode::kProgram;
  // `faultline run` evicts whole ranges, pages a policy discarded included (sim/program).
  migrator_.set_calls_cover_discarded(policy_at_gpu_turn_);
  // A live backend's eviction call covers the policy's range and populates what nobody held
  // there (the budget modes model those calls); the driver mode moves what the GPU holds.
  evicts_by_call_ = config_.capacity_mode != config::RunConfig::CapacityMode::kDriver;
  servicer_.set_listener(this);
  runner_.set_device_ranges(&device_ranges_);
  runner_.set_block_offset(offset_ / kBlockSize);
  engine_.add_component(this);
  engine_.add_component(&runner_);
  engine_.add_component(&servicer_);
  if (prefetch_queue_) engine_.add_component(prefetch_queue_.get());
}

Job::~Job() = default;

void Job::start() {
  start_policy(0);
}

void Job::start_policy(Time now) {
  host_.start({now, memory_.capacity_chunks(setup_.gpu) * kBlockSize, memory_.gpus(), setup_.gpu,
               topology_.nvlink_neighbours(setup_.gpu), this, setup_.trace_path,
               setup_.iterations});
  engine_.schedule(now, Priority::kHost, this, kStep);
}

// The host plays records in trace order. Serial traces: a record is due at its recorded time
// shifted by the delay that simulated kernels have built up so far, so recorded gaps between
// kernels remain. Issue-time traces: a record is due at its recorded CPU distance from the CPU's
// previous record (from a sync's end: the CPU's recorded wait is the simulation's to make).
void Job::handle(uint32_t kind, Time now) {
  if (kind == kNextPart) return launch_part(now);
  if (kind == kGpuNext) return start_queued(now);
  for (;;) {
    if (!have_pending_) {
      if (reader_done_ || !reader_->next(pending_)) {
        reader_done_ = true;
        if (gpu_busy()) { // the program's end waits for its last kernels
          cpu_waiting_ = true;
          return;
        }
        reader_done_ = false;
        if (setup_.again && setup_.again()) return restart(now);
        finished_ = true;
        end_time_ = now;
        return;
      }
      if (reader_->records() == 1) { // a pass starts now
        delay_ = pass_start_ - pending_.time();
        cpu_free_ = pass_start_;
        cpu_mark_ = pending_.time();
      }
      have_pending_ = true;
      pending_step_ = reader_->step();
      if (run_ahead_) host_credit_ += in_trace_order(pending_);
    }
    // The captured program's CPU faults on a host access lie in the trace's CPU gaps, before
    // it (its recorded time is the next operation's) or before the records of the same time
    // ahead of it: the run plays its own in their place, taking them out of the gaps from the
    // record's on (host_credit_).
    const Time gap = std::max<Time>(0, pending_.time() - cpu_mark_);
    const Time credit = run_ahead_ ? std::min(gap, host_credit_) : 0;
    const Time due =
        run_ahead_ ? cpu_free_ + gap - credit : std::max(now, pending_.time() + delay_);
    if (due > now) return engine_.schedule(due, Priority::kHost, this, kStep);
    if (run_ahead_ && gpu_busy() && waits_for_gpu(pending_)) {
      cpu_waiting_ = true; // the CPU has reached it; gpu_idle() plays it
      cpu_free_ = due;
      cpu_mark_ = pending_.time();
      host_credit_ -= credit;
      return;
    }
    have_pending_ = false;
    host_credit_ -= credit;
    if (!step_open_ || new_pass_ || pending_step_ != cpu_step_) begin_step(pending_step_, now);
    new_pass_ = false;
    now = apply(pending_, now);
    if (check_invariants_) memory_.check_invariants();
    engine_.progress();
    if (now < 0) return; // a kernel runs; kernel_done() resumes the host
    if (run_ahead_) {
      cpu_free_ = now;
      cpu_mark_ = cpu_done(pending_);
      // Where the CPU waits for each kernel (the replay's rule), the next record is due at its
      // distance from the launch, once the kernel is done.
      if (serial_kernels_ && pending_.type == trace::RecordType::kKernel && gpu_busy()) {
        cpu_waiting_ = waiting_for_kernel_ = true;
        return;
      }
    }
    if (now > engine_.now()) return engine_.schedule(now, Priority::kHost, this, kStep);
  }
}

// Where the CPU waits for each kernel (the replay's rule), it does so after the launch
// (handle()), so the GPU is idle by its next record.
bool Job::waits_for_gpu(const trace::Record& r) const {
  return cpu_waits_for_gpu(r, r.type == trace::RecordType::kFree ? host_.live().at(r.free.id).kind
                                                                 : trace::MemoryKind::kManaged);
}

// The GPU takes the items of its queue in order: frees of blocks happen as it reaches them; a
// kernel runs, and the next item waits for its end.
void Job::start_queued(Time now) {
  while (!gpu_running_ && !gpu_queue_.empty()) {
    Queued q = std::move(gpu_queue_.front());
    gpu_queue_.pop_front();
    if (q.is_free) {
      on_free(q.free, now);
      continue;
    }
    close_rows_before(q.index, now);
    if (policy_at_gpu_turn_) host_.launch(q.index, q.kernel.name, q.kernel.args, now);
    gpu_running_ = true;
    kernel_index_ = q.index;
    launch(q.kernel, now, q.issued);
  }
  if (!gpu_busy()) gpu_idle(now);
}

void Job::gpu_idle(Time now) {
  close_rows_before(UINT64_MAX, now);
  if (!cpu_waiting_) return;
  cpu_waiting_ = false;
  if (!waiting_for_kernel_) cpu_free_ = std::max(cpu_free_, now);
  waiting_for_kernel_ = false;
  engine_.schedule(now, Priority::kHost, this, kStep);
}

// A new pass is a new run of the program: what it still holds is freed (in id order, through
// the policy), and a fresh policy starts.
void Job::restart(Time now) {
  if (now == pass_start_) {
    throw SimulationError("job " + setup_.name + ": a pass of " + setup_.trace_path +
                          " takes no simulated time, so it cannot repeat");
  }
  std::vector<uint64_t> ids;
  for (const auto& [id, a] : host_.live()) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (uint64_t id : ids) on_free({id, 0}, now);
  reader_ = std::make_unique<trace::StepRepeater>(setup_.trace_path, setup_.iterations);
  pass_start_ = now;
  host_credit_ = 0;
  issued_ = 0;
  ++passes_;
  kernel_index_ = 0;
  host_.restart();
  new_pass_ = true;  // the fresh policy hears its first step begin, even the step just ended
  start_policy(now); // schedules the pass's first record
}

// A step's row runs from its first record to the next step's; the first row from time 0, so
// that the policy's start counts too. Where the CPU runs ahead, a row ends once the GPU has done
// the step's work too: when it starts the next step's first kernel, or drains its queue.
void Job::begin_step(int64_t step, Time now) {
  cpu_step_ = step;
  if (run_ahead_ && step_open_ && gpu_busy()) {
    row_boundaries_.push_back({step, issued_});
    if (step >= 0) host_.step_begin(static_cast<uint64_t>(step), now);
    return;
  }
  open_row(step, now);
  if (step >= 0) host_.step_begin(static_cast<uint64_t>(step), now);
}

// Rows whose boundary the GPU has reached: all before kernel `next` (everything, for
// UINT64_MAX) is done.
void Job::close_rows_before(uint64_t next, Time now) {
  while (!row_boundaries_.empty() && row_boundaries_.front().first_kernel <= next) {
    open_row(row_boundaries_.front().step, now);
    row_boundaries_.pop_front();
  }
}

void Job::open_row(int64_t step, Time now) {
  const bool first = !step_open_;
  close_step(now);
  step_start_ = first ? StepRow{} : counters_of(stats_);
  step_start_.step = step;
  step_start_.start = first ? 0 : now;
  step_open_ = true;
}

void Job::close_step(Time now) {
  if (!step_open_) return;
  StepRow row = difference(counters_of(stats_), step_start_);
  row.step = step_start_.step;
  row.start = step_start_.start;
  row.end = std::max(now, step_start_.start);
  row.program_ns = reader_->program_step_ns(row.step);
  stats_.step_rows.push_back(row);
  step_open_ = false;
}

Time Job::apply(trace::Record& record, Time now) {
  switch (record.type) {
  case trace::RecordType::kAlloc:
    on_alloc(record.alloc, now);
    return now;
  case trace::RecordType::kFree:
    if (run_ahead_ && gpu_busy()) { // a block's free, in stream order (waits_for_gpu)
      gpu_queue_.push_back({true, {}, record.free, 0, now});
      return now;
    }
    on_free(record.free, now);
    return now;
  case trace::RecordType::kHostAccess:
    return on_host_access(record.host, now);
  case trace::RecordType::kKernel:
    if (run_ahead_) {
      // The policy hears the launch as the CPU issues it (or in the GPU's turn, where
      // policy_at_gpu_turn_); the GPU runs it in its turn.
      if (!policy_at_gpu_turn_) host_.launch(issued_, record.kernel.name, record.kernel.args, now);
      gpu_queue_.push_back({false, std::move(record.kernel), {}, issued_++, now});
      if (!gpu_running_) start_queued(now);
      return now + config_.policy_launch_ns; // the policy decided on the program's CPU
    }
    host_.launch(kernel_index_, record.kernel.name, record.kernel.args, now);
    launch(record.kernel, now, now);
    return -1;
  default:
    return now; // one GPU runs kernels in order: a sync adds no wait of its own
  }
}

void Job::on_alloc(const trace::AllocRecord& r, Time now) {
  if (r.kind == trace::MemoryKind::kManaged) {
    if (r.address + r.size > (Addr{1} << kAddressSpaceBits)) {
      throw SimulationError(setup_.trace_path + ": allocation #" + std::to_string(r.id) +
                            " lies above 2^48, beyond any CUDA address");
    }
    memory_.add_managed(r.address + offset_, r.size, setup_.gpu);
  } else if (r.kind == trace::MemoryKind::kDevice) {
    const uint64_t chunks = device_chunks_.add(r.address, r.size, +1);
    capacity_->before_device(chunks, now);
    memory_.reserve_device(setup_.gpu, chunks);
    device_ranges_[r.address] = r.size;
  }
  host_.alloc(r, now);
}

void Job::on_free(const trace::FreeRecord& r, Time now) {
  const trace::AllocRecord a = host_.live().at(r.id); // the reader checked that it is live
  if (a.kind == trace::MemoryKind::kManaged) {
    for_each_block(a.address, a.size, [&](VaBlock& block, const PageMask& pages) {
      stats_.prefetch_wasted += (block.prefetched_unused[setup_.gpu] & pages).count();
    });
    memory_.remove_managed(a.address + offset_, a.size);
  } else if (a.kind == trace::MemoryKind::kDevice) {
    memory_.release_device(setup_.gpu, device_chunks_.add(a.address, a.size, -1));
    device_ranges_.erase(a.address);
  }
  host_.free(r.id, now); // after the memory is gone: the policy's actions on it do nothing
}

// The host touching GPU-resident pages takes CPU faults that pull them back, synchronously; on
// pages no processor holds (never touched, or discarded) CPU faults that populate them
// (host_populate_ns).
Time Job::on_host_access(const trace::HostAccessRecord& r, Time now) {
  Time end = now;
  for_each_block(r.address, r.size, [&](VaBlock& block, const PageMask& range) {
    const PageMask pages = range & block.allocated;
    for (unsigned gpu = 0; gpu < memory_.gpus(); ++gpu) {
      const PageMask on_gpu = pages & block.resident[gpu_processor(gpu)];
      if (on_gpu.none()) continue;
      for (unsigned big = 0; big < kBigPagesPerBlock; ++big) {
        if (on_gpu.any_in_big_page(big)) {
          ++stats_.host_faults;
          end += gpu_profile_.host_fault_ns;
        }
      }
      end = std::max(end, migrator_.to_host(block, gpu, on_gpu, end, "host fault"));
    }
    const PageMask fresh = pages & block.unpopulated();
    end +=
        static_cast<Time>(fresh.count()) * gpu_profile_.host_populate_ns / Time{kPagesPerBigPage};
    memory_.move(block, kHost, fresh, end); // first touch on the host
  });
  stats_.host_ns += end - now;
  return end;
}

Time Job::in_trace_order(const trace::Record& r) {
  if (r.type == trace::RecordType::kKernel) {
    VaBlock* block = nullptr;
    for (const trace::Access& a : r.kernel.accesses) {
      const uint64_t index = a.big_page / kBigPagesPerBlock + offset_ / kBlockSize;
      if (!block || block->index != index) block = memory_.find(index);
      if (block) block->captured_on_gpu |= 1u << (a.big_page % kBigPagesPerBlock);
    }
    return 0;
  }
  if (r.type != trace::RecordType::kHostAccess) return 0;
  Time in_trace = 0;
  for_each_block(r.host.address, r.host.size, [&](VaBlock& block, const PageMask& range) {
    uint32_t pulled = 0;
    for (unsigned big = 0; big < kBigPagesPerBlock; ++big)
      if ((block.captured_on_gpu >> big & 1) && range.any_in_big_page(big)) pulled |= 1u << big;
    block.captured_on_gpu &= ~pulled;
    if (!pulled) return;
    in_trace += captured_host_faults_ns(static_cast<uint64_t>(__builtin_popcount(pulled)),
                                        gpu_profile_.host_fault_ns, config_.host_link.reverse);
  });
  stats_.host_in_trace_ns += in_trace;
  return in_trace;
}

void Job::launch(trace::KernelRecord& k, Time now, Time launched) {
  parts_ = capacity_->parts(k, kernel_index_);
  if (parts_.size() > 1) {
    kernel_ = std::move(k);
    part_ = 0;
    launched_ = launched;
    return launch_part(now);
  }
  now = capacity_->before_launch(k, kernel_index_, now);
  const Time recorded_end = k.start + k.duration;
  runner_.start(k, kernel_index_++, now, launched,
                [this, recorded_end](Time end) { kernel_done(recorded_end, end); });
}

// A part: its accesses at their offsets from the part's start, its share of the compute time.
void Job::launch_part(Time now) {
  const size_t first = parts_[part_], count = kernel_.accesses.size();
  const size_t end = part_ + 1 < parts_.size() ? parts_[part_ + 1] : count;
  trace::KernelRecord part = kernel_;
  part.accesses.assign(kernel_.accesses.begin() + static_cast<std::ptrdiff_t>(first),
                       kernel_.accesses.begin() + static_cast<std::ptrdiff_t>(end));
  part.duration = host::budget::part_duration(kernel_.duration, first, end, count);
  // Offsets from the part's start, inside its share (the replay's parts have no offsets: an
  // access recorded late in the kernel must not stretch its part beyond that share).
  for (trace::Access& a : part.accesses)
    a.offset = std::min(a.offset - kernel_.accesses[first].offset, part.duration);
  const Time launched = part_ == 0 ? launched_ : now;
  now = capacity_->before_launch(part, kernel_index_, now);
  const bool last = ++part_ == parts_.size();
  const Time recorded_end = kernel_.start + kernel_.duration;
  runner_.start(part, kernel_index_, now, launched, [this, last, recorded_end](Time end) {
    // The runner is still in its callback: the next part starts from an event of its own.
    if (!last) return engine_.schedule(end, Priority::kHost, this, kNextPart);
    ++kernel_index_;
    kernel_done(recorded_end, end);
  });
}

void Job::kernel_done(Time recorded_end, Time now) {
  delay_ = now - recorded_end;
  capacity_->kernel_done(now);
  host_.kernel_end(kernel_index_ - 1, now);
  if (progress_) progress_->on_progress(kernel_index_, now, stats_);
  if (!run_ahead_) return engine_.schedule(now, Priority::kHost, this, kStep);
  // The runner is still in its callback: the GPU's next item starts from an event of its own.
  gpu_running_ = false;
  engine_.schedule(now, Priority::kHost, this, kGpuNext);
}

void Job::on_batch(Time now, const std::vector<uint64_t>& big_pages) {
  const policies::FaultBatchEvent batch{now, setup_.gpu, capacity_->batch_faults(big_pages)};
  if (stats_.evictions == evictions_seen_) return host_.fault_batch(batch);
  const policies::MemoryPressureEvent pressure{now, setup_.gpu, stats_.evictions - evictions_seen_,
                                               memory_.chunks_free(setup_.gpu) * kBlockSize};
  evictions_seen_ = stats_.evictions;
  host_.fault_batch(batch, &pressure);
}

void Job::advise(const policies::Range& range, policies::Advice advice, Time) {
  for_each_block(range.start, range.bytes, [&](VaBlock& block, const PageMask& pages) {
    if (advice == policies::Advice::kAccessRemotely)
      block.access_remotely |= pages & block.allocated;
    else if (advice == policies::Advice::kClear)
      block.access_remotely = block.access_remotely.minus(pages);
  });
}

void Job::discard(const policies::Range& range, Time) {
  for_each_block(range.start, range.bytes, [&](VaBlock& block, const PageMask& pages) {
    stats_.prefetch_wasted += (block.prefetched_unused[setup_.gpu] & pages).count();
    stats_.discarded_pages += (pages & block.allocated).minus(block.unpopulated()).count();
    memory_.discard(block, pages);
  });
  capacity_->policy_discarded();
}

// To a neighbour while it has room above its reserve; otherwise to the host.
void Job::evict(const policies::Range& range, ProcessorId target, Time now) {
  const unsigned gpu = setup_.gpu;
  for_each_block(range.start, range.bytes, [&](VaBlock& block, const PageMask& pages) {
    const PageMask on_gpu = pages & block.resident[gpu_processor(gpu)];
    if (on_gpu.none()) { // the replay's call still populates the untouched pages on the host
      const Time start = capacity_->migration_start(now);
      if (const Time cost = migrator_.populate_on_host(block, pages, start))
        capacity_->migration_end(start, start + cost);
      return;
    }
    const Time start = capacity_->migration_start(now);
    Time end;
    if (target != kHost && migrator_.peer_has_room(target - 1)) {
      end = migrator_.to_peer(block, gpu, target - 1, on_gpu, start, "policy eviction to peer");
    } else {
      stats_.policy_evicted_pages += on_gpu.count();
      end = migrator_.policy_evict(block, gpu, evicts_by_call_ ? pages : on_gpu, start);
      capacity_->policy_evicted(!block.chunk[gpu], end);
    }
    capacity_->migration_end(start, end);
  });
}

void Job::prefetch(const policies::Range& range, Time now) {
  capacity_->prefetch(range, now);
}

// The first leg of a multi-path prefetch: host pages go to a neighbour with room to spare.
void Job::stage(const policies::Range& range, unsigned peer, Time now) {
  for_each_block(range.start, range.bytes, [&](VaBlock& block, const PageMask& pages_in_range) {
    const PageMask pages = pages_in_range & block.resident[kHost];
    if (pages.none() || (!block.chunk[peer] && !migrator_.peer_has_room(peer))) return;
    const Time start = capacity_->migration_start(now) + capacity_->stage_call_ns();
    capacity_->migration_end(start, migrator_.stage_on_peer(block, peer, pages, start));
  });
}

void Job::finish() {
  for (const auto& [id, a] : host_.live()) {
    if (a.kind != trace::MemoryKind::kManaged) continue;
    for_each_block(a.address, a.size, [&](VaBlock& block, const PageMask& pages) {
      PageMask& unused = block.prefetched_unused[setup_.gpu];
      stats_.prefetch_wasted += (unused & pages).count();
      unused = unused.minus(pages);
    });
  }
  close_rows_before(UINT64_MAX, end_time_);
  close_step(end_time_);
  const Route& in = topology_.route(kHost, gpu_processor(setup_.gpu));
  stats_.link_to_gpu_busy_ns = in.busy_ns();
  stats_.link_to_host_busy_ns = topology_.route(gpu_processor(setup_.gpu), kHost).busy_ns();
  stats_.link_both_busy_ns = in.both_busy_ns();
}

Bytes Job::free_bytes(unsigned gpu) const {
  return gpu < memory_.gpus() ? memory_.chunks_free(gpu) * kBlockSize : 0;
}

ProcessorId Job::holder(Addr address) const {
  const VaBlock* block = memory_.find((address + offset_) / kBlockSize);
  if (!block || block->unpopulated() == block->allocated) return kNoProcessor;
  ProcessorId best = kHost;
  unsigned most = 0;
  for (unsigned gpu = 0; gpu < memory_.gpus(); ++gpu) {
    const unsigned n = block->resident[gpu_processor(gpu)].count();
    if (n > most) {
      most = n;
      best = gpu_processor(gpu);
    }
  }
  return most > block->resident[kHost].count() ? best : kHost;
}

std::vector<Addr> Job::oldest_blocks(unsigned gpu, size_t n) const {
  std::vector<Addr> out;
  if (gpu >= memory_.gpus()) return out;
  for (const VaBlock* b = memory_.oldest(gpu); b && out.size() < n; b = b->next[gpu])
    if (b->home == setup_.gpu) out.push_back(b->base() - offset_);
  return out;
}

std::string Job::describe_in_flight() const {
  return "job " + setup_.name + " (GPU " + std::to_string(setup_.gpu) +
         "): " + std::to_string(reader_->records()) + " records played" +
         (runner_.running() ? ", waiting for a kernel" : "") + (finished_ ? ", finished" : "");
}

} // namespace faultline
