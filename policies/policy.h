// The policy interface: the one contract that the simulator (and, later, the live backend)
// executes. A policy observes memory and kernel events and answers with actions.
//
// Contract:
//  - A policy never touches simulator state. It sees only the event structs below and
//    answers by appending Actions; the backend decides how and when they take effect
//    (copies queue on links, evictions free chunks) and keeps all statistics.
//  - Hooks are called in simulated-time order, once per event; `now` never goes back.
//  - Actions name address ranges; ranges outside live managed allocations are ignored by the
//    backend page by page (a policy may work at 2 MB granularity without clipping).
//  - The same inputs must give the same actions: no wall clock, no unseeded randomness.
#pragma once

#include "sim/core/types.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace faultline::policies {

struct Range {
  Addr start = 0;
  Bytes bytes = 0;
};

enum class ActionKind : uint8_t {
  // Migrate the range to `target`. The job's own GPU: from wherever the pages are (host or a
  // neighbour GPU), copies queued behind others on the route. A neighbour GPU: the range's
  // host pages are staged there ahead of use (the first leg of a multi-path prefetch), only
  // while the neighbour keeps its reserve free; otherwise nothing happens.
  kPrefetch,
  // Migrate the range's pages off the job's GPU to `target`: the host, or a neighbour GPU as
  // an exclusive victim cache (whole 2 MB blocks; written back to the host in the background so
  // the neighbour can drop them at once). A neighbour without room above its reserve gets
  // nothing: the pages go to the host.
  kEvict,
  kDiscard, // drop the range's pages everywhere without a copy (contents are dead)
  kAdvise,  // set `advice` on the range (cudaMemAdvise)
};

enum class Advice : uint8_t {
  kNone,
  // Preferred location the host, accessed by the GPU (cudaMemAdviseSetPreferredLocation(CPU) +
  // SetAccessedBy(GPU)): faults map the pages over the link instead of migrating them, and
  // accesses are served remotely. Pages already on the GPU stay until evicted.
  kAccessRemotely,
  kClear, // back to the driver's default: migrate on fault
};

struct Action {
  ActionKind kind = ActionKind::kPrefetch;
  Range range;
  ProcessorId target = kHost;
  Advice advice = Advice::kNone; // for kAdvise
};

using Actions = std::vector<Action>;

// What a policy may ask about memory at any moment (the live backend answers it too).
class MemoryView {
public:
  virtual ~MemoryView() = default;
  // GPU memory no chunk holds, in bytes.
  virtual Bytes free_bytes(unsigned gpu) const = 0;
  // Where the 2 MB block holding `address` keeps most of its pages: a GPU's processor id, the
  // host, or kNoProcessor when no page of it was ever touched (or it is not allocated).
  virtual ProcessorId holder(Addr address) const = 0;
  // Base addresses of up to `n` of this job's 2 MB blocks on `gpu`, next victim first.
  virtual std::vector<Addr> oldest_blocks(unsigned gpu, size_t n) const = 0;
};

// Once, before the first record: what the policy may size itself by.
struct StartEvent {
  Time now = 0;
  Bytes gpu_capacity = 0; // bytes of GPU memory the run gives managed data on the job's GPU
  unsigned gpus = 1;      // GPUs in the machine
  unsigned gpu = 0;       // the GPU the job runs on
  std::vector<unsigned> nvlink_peers; // GPUs joined to it by NVLink, widest first
  const MemoryView* memory = nullptr; // valid for the whole run
  // The trace being run, and the steps it runs for (0: its own; more repeat its last step,
  // trace::StepRepeater). Only offline bounds (the oracle) read it, through a StepRepeater of
  // the same iterations: an online policy must learn from events alone. (pump with a lead
  // reads the launches alone, as events a CPU running ahead would have made already.)
  std::string trace_path;
  uint64_t iterations = 0;
};

struct AllocEvent {
  Time now = 0;
  uint64_t id = 0;
  bool managed = true;  // false for device memory (cudaMalloc), which never migrates
  bool block = false;   // an allocator-level block inside a segment
  uint64_t segment = 0; // for blocks: the segment's id
  Range range;
};

struct FreeEvent {
  Time now = 0;
  uint64_t id = 0;
  bool managed = true;
  bool block = false;
  Range range;
};

struct LaunchEvent {
  Time now = 0;
  uint64_t kernel = 0; // index of the kernel in the trace
  const std::string* name = nullptr;
  std::vector<Range> args; // the allocations named by its pointer arguments
};

struct FaultBatchEvent {
  Time now = 0;
  unsigned gpu = 0;
  std::vector<Addr> faults; // distinct faulted 64 KB big pages (addresses), ascending
};

// A kernel's faults (64 KB big page addresses) handed over at its end as the driver does: batches
// of at most 256 in the order given, each sorted and without repeats. The live replay and the
// simulator's budget mode both hand them over so.
inline std::vector<FaultBatchEvent> driver_batches(Time now, unsigned gpu,
                                                   const std::vector<Addr>& faults) {
  constexpr size_t kBatch = 256;
  std::vector<FaultBatchEvent> out;
  for (size_t first = 0; first < faults.size(); first += kBatch) {
    const auto begin = faults.begin() + static_cast<std::ptrdiff_t>(first);
    FaultBatchEvent& e = out.emplace_back(FaultBatchEvent{now, gpu, {}});
    e.faults.assign(begin,
                    begin + static_cast<std::ptrdiff_t>(std::min(kBatch, faults.size() - first)));
    std::sort(e.faults.begin(), e.faults.end());
    e.faults.erase(std::unique(e.faults.begin(), e.faults.end()), e.faults.end());
  }
  return out;
}

// After a fault batch during which the driver had to evict to make room.
struct MemoryPressureEvent {
  Time now = 0;
  unsigned gpu = 0;
  uint64_t evictions = 0; // 2 MB chunks the driver evicted in that batch
  Bytes free_bytes = 0;   // GPU memory free after the batch
};

struct KernelEndEvent {
  Time now = 0;
  uint64_t kernel = 0;
};

// A training step (the trace header's "steps", repetitions included) begins: before its first
// record. Not sent for the set-up before step 0.
struct StepEvent {
  Time now = 0;
  uint64_t step = 0;
};

class IPolicy {
public:
  virtual ~IPolicy() = default;
  virtual void on_start(const StartEvent&, Actions&) {}
  virtual void on_alloc(const AllocEvent&, Actions&) {}
  virtual void on_free(const FreeEvent&, Actions&) {}
  virtual void on_kernel_launch(const LaunchEvent&, Actions&) {}
  virtual void on_fault_batch(const FaultBatchEvent&, Actions&) {}
  virtual void on_memory_pressure(const MemoryPressureEvent&, Actions&) {}
  virtual void on_kernel_end(const KernelEndEvent&, Actions&) {}
  virtual void on_step_begin(const StepEvent&, Actions&) {}
  // Whether on_fault_batch matters to the policy. The live replay hands a policy the GPU's
  // faults by draining them after each kernel, which costs the next kernel tens of
  // microseconds, so it drains only for a policy that watches them.
  virtual bool observes_faults() const { return false; }
  // Whether the policy's prefetches run, in the system it comes from, from a queue that fault
  // servicing always overtakes (DeepUM's driver module). The simulator then models that queue
  // unless the run config's driver.prefetch_queue chooses; the live replay issues prefetches on
  // its migration stream either way.
  virtual bool prefetches_behind_faults() const { return false; }
};

} // namespace faultline::policies
