// One trace run on one GPU of the machine: its host plays the trace's records in order,
// its kernels run on its GPU, the driver services its faults, its policy's actions are
// executed. Jobs share the machine's engine, memory and links; each keeps its own statistics.
#pragma once

#include "sim/gpu/kernel_runner.h"
#include "sim/host/policy_host.h"
#include "sim/run/capacity.h"
#include "sim/topology/topology.h"
#include "sim/trace/chunks.h"
#include "sim/trace/step_repeater.h"

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace faultline {

class ProgressReporter {
public:
  virtual ~ProgressReporter() = default;
  virtual void on_progress(uint64_t kernels, Time now, const Stats& stats) = 0;
};

// What every job of a run shares.
struct Machine {
  const config::RunConfig& config;
  const config::TopologySpec& spec;
  Engine& engine;
  MemoryModel& memory;
  Topology& topology;
};

struct JobSetup {
  unsigned index = 0; // the job's address space: its blocks sit at index << 48 and up
  std::string name;
  std::string trace_path;
  unsigned gpu = 0;
  std::string policy;
  nlohmann::json policy_params;
  // Runs the trace again from its start while this says so (a neighbour that keeps training
  // for as long as the run's own job runs); null: once.
  std::function<bool()> again;
  // Training steps a pass runs (trace::StepRepeater); 0: the trace's own.
  uint64_t iterations = 0;
};

// Contract: start() hands the policy its start event and schedules the first record; the
// engine then drives the job to the trace's end (finished()). How records are played follows the
// trace's timeline (trace::Timeline): an issue-time trace runs the CPU ahead of the GPU (each
// record issued at its recorded CPU distance from the CPU's previous one, kernels queued on the
// GPU in order, syncs, host accesses and segment frees waiting for the GPU's queue to drain);
// in capacity mode "budget" (the live replay's rules) the CPU also waits for each kernel, as the
// replay does; a serial trace keeps the recorded gap between a kernel's end and the next record.
// The job is the simulator's backend of the policy host (sim/host/policy_host.h): the host makes
// the policy's events, the job executes its actions on the memory model, and its capacity keeper
// (sim/run/capacity.h) applies the run's capacity mode. The policy sees the trace's own addresses;
// the job translates to and from its address space. The job keeps a StepRow per training step it
// runs (stats().step_rows, complete after finish()).
class Job : public EventHandler, public FaultListener, public host::Backend {
public:
  Job(Machine machine, JobSetup setup);
  ~Job() override;

  void start();
  bool finished() const { return finished_; }
  Time end_time() const { return end_time_; }
  const Stats& stats() const { return stats_; }
  const JobSetup& setup() const { return setup_; }
  const trace::StepRepeater& reader() const { return *reader_; }
  uint64_t passes() const { return passes_; }
  void set_batch_observer(BatchObserver* o) { servicer_.set_observer(o); }
  void set_kernel_observer(KernelObserver* o) { runner_.set_observer(o); }
  void set_progress(ProgressReporter* p) { progress_ = p; }
  void set_check_invariants(bool on) { check_invariants_ = on; }
  // Accounts pages still marked prefetched-but-unused at the run's end; closes the last step.
  void finish();

  void handle(uint32_t kind, Time now) override;
  std::string describe_in_flight() const override;
  void on_batch(Time now, const std::vector<uint64_t>& big_pages) override;
  void on_replay(Time now, uint64_t resolved) override { runner_.on_replay(now, resolved); }

  // host::Backend: the policy's actions and view of memory.
  void prefetch(const policies::Range& range, Time now) override;
  void stage(const policies::Range& range, unsigned peer, Time now) override;
  void evict(const policies::Range& range, ProcessorId target, Time now) override;
  void discard(const policies::Range& range, Time now) override;
  void advise(const policies::Range& range, policies::Advice advice, Time now) override;
  Bytes free_bytes(unsigned gpu) const override;
  ProcessorId holder(Addr address) const override;
  std::vector<Addr> oldest_blocks(unsigned gpu, size_t n) const override;

private:
  Time apply(trace::Record& record, Time now);
  void begin_step(int64_t step, Time now);
  void open_row(int64_t step, Time now);
  void close_rows_before(uint64_t next, Time now);
  void close_step(Time now);
  // The trace ended and `again` says go on: free what it holds, start a fresh policy, run it again.
  void restart(Time now);
  void start_policy(Time now);
  void on_alloc(const trace::AllocRecord& r, Time now);
  void on_free(const trace::FreeRecord& r, Time now);
  Time on_host_access(const trace::HostAccessRecord& r, Time now);
  // The captured program's residency, record by record in the trace's order (an issue-time
  // trace): a kernel leaves what it touches on the GPU (VaBlock::captured_on_gpu). For a host
  // access, returns the CPU faults the captured program took on the pages it touches that were
  // there, priced as this run prices them: they lie in the trace's gap before the record.
  Time in_trace_order(const trace::Record& r);
  // Runs kernel k (kernel_index_) on the GPU from `now`; the CPU issued it at `launched`.
  void launch(trace::KernelRecord& k, Time now, Time launched);
  // Runs part `part_` of kernel_ (cut by the capacity keeper), then the next, then ends it.
  void launch_part(Time now);
  void kernel_done(Time recorded_end, Time now);
  // Issue-time traces: whether the pending record must wait for the GPU's queue to drain, and
  // the GPU taking the next item of its queue.
  bool waits_for_gpu(const trace::Record& r) const;
  bool gpu_busy() const { return gpu_running_ || !gpu_queue_.empty(); }
  void start_queued(Time now);
  void gpu_idle(Time now);
  // Calls f(block, pages) for the job's blocks overlapping a range of trace addresses.
  template <class F> void for_each_block(Addr address, Bytes size, F&& f) {
    memory_.for_each_block(address + offset_, size, f);
  }

  const config::RunConfig& config_;
  Engine& engine_;
  MemoryModel& memory_;
  Topology& topology_;
  JobSetup setup_;
  Addr offset_;
  const config::GpuProfile& gpu_profile_;
  uint64_t evictions_seen_ = 0; // driver evictions already reported as memory pressure
  std::unique_ptr<trace::StepRepeater> reader_;
  uint64_t passes_ = 1;
  Time pass_start_ = 0;
  Stats stats_;
  Migrator migrator_;
  FaultServicer servicer_;
  KernelRunner runner_;
  host::PolicyHost host_;
  std::unique_ptr<PrefetchQueue> prefetch_queue_; // driver.prefetch_queue "behind_faults" only
  std::unique_ptr<CapacityKeeper> capacity_;
  trace::KernelRecord kernel_; // the kernel whose parts are running, when it was cut
  std::vector<size_t> parts_;  // their first accesses
  size_t part_ = 0;            // the next part to run
  Time launched_ = 0;          // when the CPU issued the kernel whose parts run
  ProgressReporter* progress_ = nullptr;
  bool check_invariants_ = false;

  trace::Record pending_;
  bool have_pending_ = false;
  int64_t pending_step_ = -1;
  StepRow step_start_; // the open step's start: its index, time and the totals then
  bool step_open_ = false;
  bool new_pass_ = false; // a neighbour's trace started again: its new policy needs a step begin
  bool finished_ = false;
  Time delay_ = 0; // serial traces: simulated minus recorded time, carried from kernel to kernel
  // Issue-time traces: the CPU ran ahead (false: serial playing).
  bool run_ahead_ = false;
  bool serial_kernels_ = false; // the CPU waits for each kernel (capacity mode "budget")
  // A policy's eviction is a live backend's call over its range (the budget modes).
  bool evicts_by_call_ = false;
  // The policy hears a launch when the GPU reaches it, not when the CPU issues it (capacity mode
  // "program"): `faultline run`'s books take in each launch's pages and the evictions made for
  // it at the launch, so at launch N they hold what the GPU holds once it reaches kernel N; the
  // GPU's state then is what the policy decides on, and its migrations start from there.
  bool policy_at_gpu_turn_ = false;
  Time cpu_free_ = 0;        // simulated time the CPU finished its last record
  Time cpu_mark_ = 0;        // recorded time it finished it (a sync's end after its wait)
  Time host_credit_ = 0;     // the captured program's host faults not yet taken out of the gaps
  bool cpu_waiting_ = false; // the CPU waits for the GPU's queue to drain
  bool reader_done_ = false; // the pass's records are all played
  bool waiting_for_kernel_ = false; // the CPU waits for its last kernel (serial_kernels_)
  // What the CPU issued and the GPU has not started: kernels, and frees of allocator blocks,
  // which happen in stream order (the program's allocator reuses a block once its stream is
  // past the free).
  struct Queued {
    bool is_free = false;
    trace::KernelRecord kernel;
    trace::FreeRecord free;
    uint64_t index = 0;
    Time issued = 0;
  };
  std::deque<Queued> gpu_queue_;
  bool gpu_running_ = false;
  // Steps the CPU has begun whose rows wait for the GPU to reach their first kernel.
  struct RowBoundary {
    int64_t step;
    uint64_t first_kernel;
  };
  std::deque<RowBoundary> row_boundaries_;
  int64_t cpu_step_ = -1; // the step the CPU is in
  uint64_t issued_ = 0;   // kernels the CPU launched
  Time end_time_ = 0;
  uint64_t kernel_index_ = 0;
  std::map<Addr, Bytes> device_ranges_;
  // The chunks device allocations hold, shared as the footprint counts them (small ones share
  // one; a chunk per allocation made T5-base's seven take 38 chunks for 33).
  trace::SharedChunks device_chunks_;
};

} // namespace faultline
