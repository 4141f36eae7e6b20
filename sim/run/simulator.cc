#include "sim/run/simulator.h"

#include "policies/registry.h"
#include "sim/core/error.h"

#include <algorithm>

namespace faultline {
namespace {

enum HostEvent : uint32_t { kStep };

uint64_t chunks_for(Bytes size) {
  return (size + kBlockSize - 1) / kBlockSize;
}

} // namespace

Simulator::Simulator(const config::RunConfig& config, const std::string& trace_path,
                     uint64_t capacity_chunks)
    : config_(config), trace_path_(trace_path), reader_(trace_path), engine_(config.watchdog_ns),
      memory_(config.gpus, capacity_chunks), to_gpu_("PCIe host->GPU0", config.host_link.forward),
      to_host_("PCIe GPU0->host", config.host_link.reverse),
      migrator_(memory_, to_gpu_, to_host_, config.gpu, config.driver, stats_),
      servicer_(engine_, memory_, migrator_, 0, config.gpu, config.driver, stats_),
      runner_(engine_, memory_, servicer_, migrator_, to_gpu_, 0, config, stats_) {
  policy_ = policies::Registry::instance().create(config.policy, config.policy_params,
                                                  "run config $.policy");
  servicer_.set_listener(this);
  runner_.set_device_ranges(&device_ranges_);
  engine_.add_component(this);
  engine_.add_component(&runner_);
  engine_.add_component(&servicer_);
}

Simulator::~Simulator() = default;

void Simulator::set_transfer_observer(TransferObserver* o) {
  to_gpu_.set_observer(o);
  to_host_.set_observer(o);
}

const Stats& Simulator::run() {
  if (started_) throw SimulationError("a Simulator runs once");
  started_ = true;
  actions_.clear();
  policy_->on_start({0, memory_.capacity_chunks() * kBlockSize, config_.gpus, trace_path_},
                    actions_);
  execute(actions_, 0);
  engine_.schedule(0, Priority::kHost, this, kStep);
  engine_.run();
  if (!finished_) {
    throw SimulationError("the simulation stopped before the trace's end: nothing was left to " +
                          std::string("happen, yet work was pending:\n") +
                          engine_.describe_in_flight());
  }
  finish();
  return stats_;
}

// The host replays records in trace order. A record is due at its recorded time shifted by the
// delay that simulated kernels have built up so far, so recorded gaps between kernels remain.
void Simulator::handle(uint32_t, Time now) {
  for (;;) {
    if (!have_pending_) {
      if (!reader_.next(pending_)) {
        finished_ = true;
        end_time_ = now;
        return;
      }
      if (reader_.records() == 1) delay_ = -pending_.time(); // the run starts at 0
      have_pending_ = true;
    }
    const Time due = std::max(now, pending_.time() + delay_);
    if (due > now) return engine_.schedule(due, Priority::kHost, this, kStep);
    have_pending_ = false;
    now = apply(pending_, now);
    if (check_invariants_) memory_.check_invariants();
    engine_.progress();
    if (now < 0) return; // a kernel runs; kernel_done() resumes the host
    if (now > engine_.now()) return engine_.schedule(now, Priority::kHost, this, kStep);
  }
}

Time Simulator::apply(trace::Record& record, Time now) {
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

void Simulator::on_alloc(const trace::AllocRecord& r, Time now) {
  if (r.kind == trace::MemoryKind::kManaged) {
    memory_.add_managed(r.address, r.size);
  } else if (r.kind == trace::MemoryKind::kDevice) {
    memory_.reserve_device(0, chunks_for(r.size));
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

void Simulator::on_free(const trace::FreeRecord& r, Time now) {
  const trace::AllocRecord a = live_.at(r.id); // the reader checked that it is live
  live_.erase(r.id);
  if (a.kind == trace::MemoryKind::kManaged) {
    memory_.for_each_block(a.address, a.size, [&](VaBlock& block, const PageMask& pages) {
      stats_.prefetch_wasted += (block.prefetched_unused[0] & pages).count();
    });
    memory_.remove_managed(a.address, a.size);
  } else if (a.kind == trace::MemoryKind::kDevice) {
    memory_.release_device(0, chunks_for(a.size));
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
Time Simulator::on_host_access(const trace::HostAccessRecord& r, Time now) {
  Time end = now;
  memory_.for_each_block(r.address, r.size, [&](VaBlock& block, const PageMask& range) {
    const PageMask pages = range & block.allocated;
    const PageMask on_gpu = pages & block.resident[gpu_processor(0)];
    for (unsigned big = 0; big < kBigPagesPerBlock; ++big) {
      if (on_gpu.any_in_big_page(big)) {
        ++stats_.host_faults;
        end += config_.gpu.host_fault_ns;
      }
    }
    end = std::max(end, migrator_.to_host(block, 0, pages, end, "host fault"));
  });
  stats_.host_ns += end - now;
  return end;
}

void Simulator::launch(trace::KernelRecord& k, Time now) {
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
    now = migrations_done_;
  }
  const Time recorded_end = k.start + k.duration;
  runner_.start(k, kernel_index_++, now,
                [this, recorded_end](Time end) { kernel_done(recorded_end, end); });
}

// Budget mode: the kernel's chunks must all fit; the oldest others leave first, as the live
// replay's budget evicts them.
Time Simulator::make_room_for(const trace::KernelRecord& k, Time now) {
  std::vector<uint64_t> blocks; // managed ones: device memory holds its chunks already
  for (const trace::Access& a : k.accesses) {
    const uint64_t index = a.big_page / kBigPagesPerBlock;
    if (blocks.empty() || blocks.back() != index) blocks.push_back(index);
  }
  std::sort(blocks.begin(), blocks.end());
  blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
  std::erase_if(blocks, [&](uint64_t index) { return memory_.find(index) == nullptr; });
  uint64_t needed = 0;
  for (uint64_t index : blocks) needed += memory_.find(index)->chunk[0] ? 0 : 1;
  const uint64_t room = memory_.capacity_chunks() - memory_.device_chunks(0);
  if (blocks.size() > room) {
    throw SimulationError("kernel #" + std::to_string(kernel_index_) + " (" + k.name + ") needs " +
                          std::to_string(blocks.size()) +
                          " chunks of 2 MB at once, more than the budget leaves (" +
                          std::to_string(room) + " chunks)");
  }
  return migrator_.make_room_keeping(0, now, needed, blocks);
}

void Simulator::kernel_done(Time recorded_end, Time now) {
  delay_ = now - recorded_end;
  actions_.clear();
  policy_->on_kernel_end({now, kernel_index_ - 1}, actions_);
  execute(actions_, now);
  if (progress_) progress_->on_progress(kernel_index_, now, stats_);
  engine_.schedule(now, Priority::kHost, this, kStep);
}

void Simulator::on_batch(Time now, const std::vector<uint64_t>& big_pages) {
  policies::FaultBatchEvent event{now, 0, {}};
  event.faults.reserve(big_pages.size());
  for (uint64_t p : big_pages) event.faults.push_back(p * kBigPageSize);
  actions_.clear();
  policy_->on_fault_batch(event, actions_);
  if (stats_.evictions > evictions_seen_) {
    policy_->on_memory_pressure(
        {now, 0, stats_.evictions - evictions_seen_, memory_.chunks_free(0) * kBlockSize},
        actions_);
    evictions_seen_ = stats_.evictions;
  }
  execute(actions_, now);
}

void Simulator::execute(const policies::Actions& actions, Time now) {
  for (const policies::Action& action : actions) {
    const auto& range = action.range;
    switch (action.kind) {
    case policies::ActionKind::kPrefetch:
      prefetch(action, now);
      break;
    case policies::ActionKind::kEvict:
      memory_.for_each_block(range.start, range.bytes, [&](VaBlock& block, const PageMask& pages) {
        const PageMask on_gpu = pages & block.resident[gpu_processor(0)];
        stats_.policy_evicted_pages += on_gpu.count();
        const Time start = budget_mode() ? std::max(now, migrations_done_) : now;
        const Time end = migrator_.to_host(block, 0, on_gpu, start, "policy eviction");
        migrations_done_ = std::max(migrations_done_, end);
      });
      break;
    case policies::ActionKind::kAdvise:
      memory_.for_each_block(range.start, range.bytes, [&](VaBlock& block, const PageMask& pages) {
        if (action.advice == policies::Advice::kAccessRemotely)
          block.access_remotely |= pages & block.allocated;
        else if (action.advice == policies::Advice::kClear)
          block.access_remotely = block.access_remotely.minus(pages);
      });
      break;
    case policies::ActionKind::kDiscard:
      memory_.for_each_block(range.start, range.bytes, [&](VaBlock& block, const PageMask& pages) {
        stats_.prefetch_wasted += (block.prefetched_unused[0] & pages).count();
        stats_.discarded_pages += (pages & block.allocated).minus(block.unpopulated()).count();
        memory_.drop(block, pages);
      });
      break;
    }
  }
}

void Simulator::prefetch(const policies::Action& action, Time now) {
  if (action.target != gpu_processor(0)) {
    throw SimulationError("policy " + config_.policy + " asked to prefetch to processor " +
                          std::to_string(action.target) + "; this run has GPU 0 (processor 1)");
  }
  if (budget_mode()) return prefetch_by_block(action, now);
  memory_.for_each_block(
      action.range.start, action.range.bytes, [&](VaBlock& block, const PageMask& range) {
        const PageMask pages = (range & block.allocated).minus(block.resident[gpu_processor(0)]);
        if (pages.none()) return;
        const Time ready = block.chunk[0] ? now : migrator_.make_room(0, now, &block);
        const Time end = migrator_.to_gpu(block, 0, pages, pages, ready, "prefetch");
        block.ready_at[0] = std::max(block.ready_at[0], end);
      });
}

// Budget mode: one call per 2 MB block on the migration stream, in order, as the live replay
// issues them; each call costs the driver's work besides its copy.
void Simulator::prefetch_by_block(const policies::Action& action, Time now) {
  const config::GpuProfile& gpu = config_.gpu;
  memory_.for_each_block(
      action.range.start, action.range.bytes, [&](VaBlock& block, const PageMask& range) {
        Time t = std::max(now, migrations_done_) + gpu.prefetch_call_ns;
        const PageMask pages = (range & block.allocated).minus(block.resident[gpu_processor(0)]);
        if (pages.none()) {
          migrations_done_ = t;
          return;
        }
        if (!block.chunk[0]) t = migrator_.make_room(0, t, &block);
        const PageMask fresh = block.unpopulated() & pages;
        t += gpu.prefetch_populate_ns * fresh.big_page_count();
        if (pages.minus(fresh).any()) t += gpu.prefetch_copy_extra_ns;
        const Time end = migrator_.to_gpu(block, 0, pages, pages, t, "prefetch");
        block.ready_at[0] = std::max(block.ready_at[0], end);
        migrations_done_ = end;
      });
}

void Simulator::finish() {
  for (const auto& [id, a] : live_) {
    if (a.kind != trace::MemoryKind::kManaged) continue;
    memory_.for_each_block(a.address, a.size, [&](VaBlock& block, const PageMask& pages) {
      stats_.prefetch_wasted += (block.prefetched_unused[0] & pages).count();
      block.prefetched_unused[0] = block.prefetched_unused[0].minus(pages);
    });
  }
}

std::string Simulator::describe_in_flight() const {
  return "host: " + std::to_string(reader_.records()) + " records replayed" +
         (runner_.running() ? ", waiting for a kernel" : "");
}

} // namespace faultline
