#include "sim/run/job.h"

#include "policies/registry.h"
#include "sim/core/error.h"

#include <algorithm>

namespace faultline {
namespace {

enum HostEvent : uint32_t { kStep };

uint64_t chunks_for(Bytes size) {
  return (size + kBlockSize - 1) / kBlockSize;
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
              stats_) {
  policy_ = create_policy();
  servicer_.set_listener(this);
  runner_.set_device_ranges(&device_ranges_);
  runner_.set_block_offset(offset_ / kBlockSize);
  engine_.add_component(this);
  engine_.add_component(&runner_);
  engine_.add_component(&servicer_);
}

Job::~Job() = default;

std::unique_ptr<policies::IPolicy> Job::create_policy() const {
  const std::string where = setup_.index == 0 ? "run config $.policy"
                                              : "run config $.neighbour_jobs[" +
                                                    std::to_string(setup_.index - 1) + "].policy";
  return policies::Registry::instance().create(setup_.policy, setup_.policy_params, where);
}

void Job::start() {
  start_policy(0);
}

void Job::start_policy(Time now) {
  actions_.clear();
  policies::StartEvent event{now,
                             memory_.capacity_chunks(setup_.gpu) * kBlockSize,
                             memory_.gpus(),
                             setup_.gpu,
                             topology_.nvlink_neighbours(setup_.gpu),
                             this,
                             setup_.trace_path,
                             setup_.iterations};
  policy_->on_start(event, actions_);
  execute(actions_, now);
  engine_.schedule(now, Priority::kHost, this, kStep);
}

// The host replays records in trace order. A record is due at its recorded time shifted by the
// delay that simulated kernels have built up so far, so recorded gaps between kernels remain.
void Job::handle(uint32_t, Time now) {
  for (;;) {
    if (!have_pending_) {
      if (!reader_->next(pending_)) {
        if (setup_.again && setup_.again()) return restart(now);
        finished_ = true;
        end_time_ = now;
        return;
      }
      if (reader_->records() == 1) delay_ = pass_start_ - pending_.time(); // a pass starts now
      have_pending_ = true;
      pending_step_ = reader_->step();
    }
    const Time due = std::max(now, pending_.time() + delay_);
    if (due > now) return engine_.schedule(due, Priority::kHost, this, kStep);
    have_pending_ = false;
    if (!step_open_ || new_pass_ || pending_step_ != step_start_.step)
      begin_step(pending_step_, now);
    new_pass_ = false;
    now = apply(pending_, now);
    if (check_invariants_) memory_.check_invariants();
    engine_.progress();
    if (now < 0) return; // a kernel runs; kernel_done() resumes the host
    if (now > engine_.now()) return engine_.schedule(now, Priority::kHost, this, kStep);
  }
}

// A new pass is a new run of the program: what it still holds is freed (in id order, through
// the policy), and a fresh policy starts.
void Job::restart(Time now) {
  if (now == pass_start_) {
    throw SimulationError("job " + setup_.name + ": a pass of " + setup_.trace_path +
                          " takes no simulated time, so it cannot repeat");
  }
  std::vector<uint64_t> ids;
  for (const auto& [id, a] : live_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (uint64_t id : ids) on_free({id, 0}, now);
  reader_ = std::make_unique<trace::StepRepeater>(setup_.trace_path, setup_.iterations);
  pass_start_ = now;
  ++passes_;
  kernel_index_ = 0;
  policy_ = create_policy();
  new_pass_ = true; // the fresh policy hears its first step begin, even the step just ended
  start_policy(now); // schedules the pass's first record
}

// A step's row runs from its first record to the next step's; the first row from time 0, so
// that the policy's start counts too.
void Job::begin_step(int64_t step, Time now) {
  const bool first = !step_open_;
  close_step(now);
  step_start_ = first ? StepRow{} : counters_of(stats_);
  step_start_.step = step;
  step_start_.start = first ? 0 : now;
  step_open_ = true;
  if (step < 0) return;
  actions_.clear();
  policy_->on_step_begin({now, static_cast<uint64_t>(step)}, actions_);
  execute(actions_, now);
}

void Job::close_step(Time now) {
  if (!step_open_) return;
  StepRow row = difference(counters_of(stats_), step_start_);
  row.step = step_start_.step;
  row.start = step_start_.start;
  row.end = std::max(now, step_start_.start);
  stats_.step_rows.push_back(row);
  step_open_ = false;
}

Time Job::apply(trace::Record& record, Time now) {
  switch (record.type) {
  case trace::RecordType::kAlloc:
    on_alloc(record.alloc, now);
    return now;
  case trace::RecordType::kFree:
    on_free(record.free, now);
    return now;
  case trace::RecordType::kHostAccess:
    return on_host_access(record.host, now);
  case trace::RecordType::kKernel:
    launch(record.kernel, now);
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
    memory_.reserve_device(setup_.gpu, chunks_for(r.size));
    device_ranges_[r.address] = r.size;
  }
  live_[r.id] = r;
  actions_.clear();
  policy_->on_alloc({now,
                     r.id,
                     r.kind != trace::MemoryKind::kDevice,
                     r.kind == trace::MemoryKind::kAllocatorBlock,
                     r.segment,
                     {r.address, r.size}},
                    actions_);
  execute(actions_, now);
}

void Job::on_free(const trace::FreeRecord& r, Time now) {
  const trace::AllocRecord a = live_.at(r.id); // the reader checked that it is live
  live_.erase(r.id);
  if (a.kind == trace::MemoryKind::kManaged) {
    for_each_block(a.address, a.size, [&](VaBlock& block, const PageMask& pages) {
      stats_.prefetch_wasted += (block.prefetched_unused[setup_.gpu] & pages).count();
    });
    memory_.remove_managed(a.address + offset_, a.size);
  } else if (a.kind == trace::MemoryKind::kDevice) {
    memory_.release_device(setup_.gpu, chunks_for(a.size));
    device_ranges_.erase(a.address);
  }
  actions_.clear();
  policy_->on_free({now,
                    r.id,
                    a.kind != trace::MemoryKind::kDevice,
                    a.kind == trace::MemoryKind::kAllocatorBlock,
                    {a.address, a.size}},
                   actions_);
  execute(actions_, now);
}

// The host touching GPU-resident pages takes CPU faults that pull them back, synchronously.
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
    memory_.move(block, kHost, pages & block.unpopulated(), end); // first touch on the host
  });
  stats_.host_ns += end - now;
  return end;
}

void Job::launch(trace::KernelRecord& k, Time now) {
  policies::LaunchEvent event{now, kernel_index_, &k.name, {}};
  for (uint64_t id : k.args) {
    const trace::AllocRecord& a = live_.at(id);
    event.args.push_back({a.address, a.size});
  }
  actions_.clear();
  policy_->on_kernel_launch(event, actions_);
  execute(actions_, now);
  if (budget_mode()) {
    migrations_done_ = make_room_for(k, std::max(now, migrations_done_));
    if (policy_->observes_faults()) note_absent(k);
    // The replay launches each kernel once the host is done and waits for it.
    now = migrations_done_ + gpu_profile_.launch_ns;
  }
  const Time recorded_end = k.start + k.duration;
  runner_.start(k, kernel_index_++, now,
                [this, recorded_end](Time end) { kernel_done(recorded_end, end); });
}

// Budget mode: the kernel's chunks must all fit; the oldest others leave first, as the live
// replay's budget evicts them.
Time Job::make_room_for(const trace::KernelRecord& k, Time now) {
  const uint64_t first = offset_ / kBlockSize;
  std::vector<uint64_t> blocks; // managed ones: device memory holds its chunks already
  for (const trace::Access& a : k.accesses) {
    const uint64_t index = first + a.big_page / kBigPagesPerBlock;
    if (blocks.empty() || blocks.back() != index) blocks.push_back(index);
  }
  std::sort(blocks.begin(), blocks.end());
  blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
  std::erase_if(blocks, [&](uint64_t index) { return memory_.find(index) == nullptr; });
  const unsigned gpu = setup_.gpu;
  uint64_t needed = 0;
  for (uint64_t index : blocks) needed += memory_.find(index)->chunk[gpu] ? 0 : 1;
  const uint64_t room = memory_.capacity_chunks(gpu) - memory_.device_chunks(gpu);
  if (blocks.size() > room) {
    throw SimulationError("kernel #" + std::to_string(kernel_index_) + " (" + k.name + ") needs " +
                          std::to_string(blocks.size()) +
                          " chunks of 2 MB at once, more than the budget leaves (" +
                          std::to_string(room) + " chunks)");
  }
  return migrator_.make_room_keeping(gpu, now, needed, blocks);
}

void Job::kernel_done(Time recorded_end, Time now) {
  delay_ = now - recorded_end;
  if (budget_mode()) report_faults(now);
  actions_.clear();
  policy_->on_kernel_end({now, kernel_index_ - 1}, actions_);
  execute(actions_, now);
  if (progress_) progress_->on_progress(kernel_index_, now, stats_);
  engine_.schedule(now, Priority::kHost, this, kStep);
}

// Budget mode: the policy learns what the live replay tells it, the pages the kernel finds off
// the GPU at its launch, grouped by 2 MB block in order of first touch, pages in address order
// (sim/live/replay.cc, note_absent). Pages the driver brought in beside earlier faults count as
// on the GPU here, where the replay's books miss them.
void Job::note_absent(const trace::KernelRecord& k) {
  kernel_faults_.clear();
  const ProcessorId gpu = gpu_processor(setup_.gpu);
  const uint64_t first = offset_ / kBigPageSize;
  std::vector<std::pair<uint64_t, uint32_t>> blocks; // block, its absent pages
  std::unordered_map<uint64_t, size_t> at;
  for (const trace::Access& a : k.accesses) {
    const uint64_t page = first + a.big_page, index = page / kBigPagesPerBlock;
    const VaBlock* block = memory_.find(index);
    if (!block || block->resident[gpu].any_in_big_page(page % kBigPagesPerBlock)) continue;
    auto [it, fresh] = at.try_emplace(index, blocks.size());
    if (fresh) blocks.push_back({index, 0});
    blocks[it->second].second |= 1u << (page % kBigPagesPerBlock);
  }
  for (const auto& [index, pages] : blocks)
    for (unsigned p = 0; p < kBigPagesPerBlock; ++p)
      if (pages >> p & 1)
        kernel_faults_.push_back((index * kBigPagesPerBlock + p) * kBigPageSize - offset_);
}

// Budget mode: at the kernel's end, as the replay hands them over.
void Job::report_faults(Time now) {
  for (const policies::FaultBatchEvent& event :
       policies::driver_batches(now, setup_.gpu, kernel_faults_)) {
    actions_.clear();
    policy_->on_fault_batch(event, actions_);
    execute(actions_, now);
  }
  kernel_faults_.clear();
}

void Job::on_batch(Time now, const std::vector<uint64_t>& big_pages) {
  actions_.clear();
  if (!budget_mode()) { // budget mode: note_absent
    policies::FaultBatchEvent event{now, setup_.gpu, {}};
    event.faults.reserve(big_pages.size());
    for (uint64_t p : big_pages) event.faults.push_back(p * kBigPageSize - offset_);
    policy_->on_fault_batch(event, actions_);
  }
  if (stats_.evictions > evictions_seen_) {
    policy_->on_memory_pressure({now, setup_.gpu, stats_.evictions - evictions_seen_,
                                 memory_.chunks_free(setup_.gpu) * kBlockSize},
                                actions_);
    evictions_seen_ = stats_.evictions;
  }
  execute(actions_, now);
}

void Job::execute(const policies::Actions& actions, Time now) {
  for (const policies::Action& action : actions) {
    const auto& range = action.range;
    switch (action.kind) {
    case policies::ActionKind::kPrefetch:
      prefetch(action, now);
      break;
    case policies::ActionKind::kEvict:
      evict(action, now);
      break;
    case policies::ActionKind::kAdvise:
      for_each_block(range.start, range.bytes, [&](VaBlock& block, const PageMask& pages) {
        if (action.advice == policies::Advice::kAccessRemotely)
          block.access_remotely |= pages & block.allocated;
        else if (action.advice == policies::Advice::kClear)
          block.access_remotely = block.access_remotely.minus(pages);
      });
      break;
    case policies::ActionKind::kDiscard:
      for_each_block(range.start, range.bytes, [&](VaBlock& block, const PageMask& pages) {
        stats_.prefetch_wasted += (block.prefetched_unused[setup_.gpu] & pages).count();
        stats_.discarded_pages += (pages & block.allocated).minus(block.unpopulated()).count();
        memory_.drop(block, pages);
      });
      break;
    }
  }
}

void Job::evict(const policies::Action& action, Time now) {
  const unsigned gpu = setup_.gpu;
  const bool to_peer = action.target != kHost;
  if (to_peer && (action.target > memory_.gpus() || action.target == gpu_processor(gpu))) {
    throw SimulationError("policy " + setup_.policy + " asked to evict to processor " +
                          std::to_string(action.target) + "; neighbours of GPU " +
                          std::to_string(gpu) + " are processors 1 to " +
                          std::to_string(memory_.gpus()) + " other than its own");
  }
  for_each_block(action.range.start, action.range.bytes,
                 [&](VaBlock& block, const PageMask& pages) {
                   const PageMask on_gpu = pages & block.resident[gpu_processor(gpu)];
                   if (on_gpu.none()) return;
                   const Time start = budget_mode() ? std::max(now, migrations_done_) : now;
                   Time end;
                   if (to_peer && migrator_.peer_has_room(action.target - 1)) {
                     end = migrator_.to_peer(block, gpu, action.target - 1, on_gpu, start,
                                             "policy eviction to peer");
                   } else {
                     stats_.policy_evicted_pages += on_gpu.count();
                     end = migrator_.to_host(block, gpu, on_gpu, start, "policy eviction", true);
                   }
                   migrations_done_ = std::max(migrations_done_, end);
                 });
}

void Job::prefetch(const policies::Action& action, Time now) {
  const unsigned gpu = setup_.gpu;
  if (action.target == kHost || action.target > memory_.gpus()) {
    throw SimulationError("policy " + setup_.policy + " asked to prefetch to processor " +
                          std::to_string(action.target) + "; this machine's GPUs are " +
                          "processors 1 to " + std::to_string(memory_.gpus()));
  }
  if (action.target != gpu_processor(gpu)) return stage(action, action.target - 1, now);
  if (budget_mode()) return prefetch_by_block(action, now);
  for_each_block(
      action.range.start, action.range.bytes, [&](VaBlock& block, const PageMask& range) {
        const PageMask pages = (range & block.allocated).minus(block.resident[gpu_processor(gpu)]);
        if (pages.none()) return;
        const Time ready = block.chunk[gpu] ? now : migrator_.make_room(gpu, now, &block);
        const Time end = migrator_.to_gpu(block, gpu, pages, pages, ready, "prefetch");
        block.ready_at[gpu] = std::max(block.ready_at[gpu], end);
      });
}

// The first leg of a multi-path prefetch: host pages go to a neighbour with room to spare.
void Job::stage(const policies::Action& action, unsigned peer, Time now) {
  for_each_block(action.range.start, action.range.bytes,
                 [&](VaBlock& block, const PageMask& range) {
                   const PageMask pages = range & block.resident[kHost];
                   if (pages.none() || (!block.chunk[peer] && !migrator_.peer_has_room(peer)))
                     return;
                   // Budget mode: on the migration stream, in order, as the live replay issues it.
                   const Time start = budget_mode() ? std::max(now, migrations_done_) : now;
                   const Time end = migrator_.stage_on_peer(block, peer, pages, start);
                   if (budget_mode()) migrations_done_ = end;
                 });
}

// Budget mode: one call per 2 MB block on the migration stream, in order, as the live replay
// issues them; each call costs the driver's work besides its copy.
void Job::prefetch_by_block(const policies::Action& action, Time now) {
  const unsigned gpu = setup_.gpu;
  const config::GpuProfile& profile = gpu_profile_;
  for_each_block(
      action.range.start, action.range.bytes, [&](VaBlock& block, const PageMask& range) {
        Time t = std::max(now, migrations_done_) + profile.prefetch_call_ns;
        const PageMask pages = (range & block.allocated).minus(block.resident[gpu_processor(gpu)]);
        if (pages.none()) {
          migrations_done_ = t;
          return;
        }
        if (!block.chunk[gpu]) t = migrator_.make_room(gpu, t, &block);
        const PageMask fresh = block.unpopulated() & pages;
        t += profile.prefetch_populate_ns * fresh.big_page_count();
        if (pages.minus(fresh).any()) t += profile.prefetch_copy_extra_ns;
        const Time end = migrator_.to_gpu(block, gpu, pages, pages, t, "prefetch");
        block.ready_at[gpu] = std::max(block.ready_at[gpu], end);
        migrations_done_ = end;
      });
}

void Job::finish() {
  for (const auto& [id, a] : live_) {
    if (a.kind != trace::MemoryKind::kManaged) continue;
    for_each_block(a.address, a.size, [&](VaBlock& block, const PageMask& pages) {
      PageMask& unused = block.prefetched_unused[setup_.gpu];
      stats_.prefetch_wasted += (unused & pages).count();
      unused = unused.minus(pages);
    });
  }
  close_step(end_time_);
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
         "): " + std::to_string(reader_->records()) + " records replayed" +
         (runner_.running() ? ", waiting for a kernel" : "") + (finished_ ? ", finished" : "");
}

} // namespace faultline
