// Who keeps a job's GPU residency within its capacity: the strategy behind the run config's
// capacity mode. The driver evicts (kDriver: a fault that finds the GPU full evicts, and the
// policy hears each fault batch as it is serviced), or the budget evicts (kBudget: the live
// replay's rules, sim/host/budget.h, run on the memory model, so that `faultline sim` and
// `faultline replay` run the same experiment; kProgram: the same books as `faultline run` keeps
// them inside the program, without the replay's wait for each kernel).
#pragma once

#include "sim/config/run_config.h"
#include "sim/host/policy_host.h"
#include "sim/memory/memory_model.h"
#include "sim/trace/format.h"
#include "sim/uvm/migrator.h"
#include "sim/uvm/prefetch_queue.h"

#include <memory>
#include <vector>

namespace faultline {

// The parts of a job a strategy works with.
struct JobMemory {
  MemoryModel& memory;
  Migrator& migrator;
  host::PolicyHost& host;
  const config::GpuProfile& profile;
  unsigned gpu;
  Addr offset; // the job's address space: trace address + offset = model address
  // The driver's prefetch queue (driver.prefetch_queue "behind_faults"); null: prefetches run at
  // once.
  PrefetchQueue* queue = nullptr;
  Stats* stats = nullptr; // the job's: what its kernels waited for
};

// Contract: the job asks parts() of each kernel and runs each part as a kernel of its own
// (before_launch() before each), then calls kernel_done() once after the last; every
// prefetch of the job's own GPU goes through prefetch(), and every migration a policy asks for
// starts no earlier than migration_start() and reports its end to migration_end().
class CapacityKeeper {
public:
  virtual ~CapacityKeeper() = default;
  // Where kernel `index` is cut (host::budget::parts): {0}, unless it needs more chunks at once
  // than a budget leaves.
  virtual std::vector<size_t> parts(const trace::KernelRecord&, uint64_t) const { return {0}; }
  // Kernel `index` (or a part of it) is launched at `now`: returns when it starts running.
  virtual Time before_launch(const trace::KernelRecord& k, uint64_t index, Time now) = 0;
  // The kernel ended at `now`: the policy hears what the strategy hands over then.
  virtual void kernel_done(Time now) = 0;
  // Of a batch the driver serviced (64 KB big pages, model addresses): the faults the policy hears.
  virtual std::vector<Addr> batch_faults(const std::vector<uint64_t>& big_pages) const = 0;
  virtual void prefetch(const policies::Range& range, Time now) = 0;
  // The driver work of staging one 2 MB block of host data on a neighbour, besides its copy: the
  // live replay issues each as a cudaMemPrefetchAsync to that GPU (kBudget), which costs what a
  // prefetch of host data costs; the driver's own staging (kDriver) has no call to pay for.
  virtual Time stage_call_ns() const { return 0; }
  // A device allocation of `chunks` is made at `now` (device memory is never evicted): the
  // strategy makes room for it. The budget evicts the oldest chunks on the migration stream, as
  // the replay's next kernel would; the driver's GPU has what it has.
  virtual void before_device(uint64_t /*chunks*/, Time /*now*/) {}
  // A policy evicted a block to the host on the migration stream (after migration_start()),
  // done at `end`; `chunk_freed`: the block left the GPU whole, its chunk counted free at once.
  virtual void policy_evicted(bool /*chunk_freed*/, Time /*end*/) {}
  // The policy discarded pages (the program's next launch then waits for the migration stream).
  virtual void policy_discarded() {}
  // A policy's migration issued at `now` starts at migration_start(now) and, begun at `start`,
  // ends at `end` (migration_end).
  virtual Time migration_start(Time now) const = 0;
  virtual void migration_end(Time start, Time end) = 0;
};

std::unique_ptr<CapacityKeeper> make_capacity_keeper(config::RunConfig::CapacityMode mode,
                                                     JobMemory parts);

} // namespace faultline
