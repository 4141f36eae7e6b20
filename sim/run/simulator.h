// Wires one run together: the host replays the trace's records in order, the GPU runs kernels,
// the driver services faults, and the policy's actions are executed.
#pragma once

#include "policies/policy.h"
#include "sim/gpu/kernel_runner.h"
#include "sim/trace/reader.h"

#include <map>
#include <memory>
#include <unordered_map>

namespace faultline {

class ProgressReporter {
public:
  virtual ~ProgressReporter() = default;
  virtual void on_progress(uint64_t kernels, Time now, const Stats& stats) = 0;
};

// Contract: construct with a validated config, the trace to replay and the GPU capacity in
// chunks; run() replays the whole trace once and returns what was measured. Deterministic.
class Simulator : public EventHandler, public FaultListener {
public:
  Simulator(const config::RunConfig& config, const std::string& trace_path,
            uint64_t capacity_chunks);
  ~Simulator() override;

  void set_transfer_observer(TransferObserver* o);
  void set_batch_observer(BatchObserver* o) { servicer_.set_observer(o); }
  void set_kernel_observer(KernelObserver* o) { runner_.set_observer(o); }
  void set_progress(ProgressReporter* p) { progress_ = p; }
  // Checks the memory model's invariants after every record (slow; for tests).
  void set_check_invariants(bool on) { check_invariants_ = on; }

  const Stats& run();
  Time end_time() const { return end_time_; }
  const trace::TraceReader& reader() const { return reader_; }

  void handle(uint32_t kind, Time now) override;
  std::string describe_in_flight() const override;
  void on_batch(Time now, const std::vector<uint64_t>& big_pages) override;
  void on_replay(Time now, uint64_t resolved) override { runner_.on_replay(now, resolved); }

private:
  // Applies one record at `now`; returns the host's time afterwards, or -1 if a kernel was
  // launched and the host waits for it.
  Time apply(trace::Record& record, Time now);
  void on_alloc(const trace::AllocRecord& r, Time now);
  void on_free(const trace::FreeRecord& r, Time now);
  Time on_host_access(const trace::HostAccessRecord& r, Time now);
  void launch(trace::KernelRecord& k, Time now);
  Time make_room_for(const trace::KernelRecord& k, Time now);
  bool budget_mode() const {
    return config_.capacity_mode == config::RunConfig::CapacityMode::kBudget;
  }
  void kernel_done(Time recorded_end, Time now);
  void execute(const policies::Actions& actions, Time now);
  void prefetch(const policies::Action& action, Time now);
  void prefetch_by_block(const policies::Action& action, Time now);
  void finish();

  const config::RunConfig& config_;
  std::string trace_path_;
  uint64_t evictions_seen_ = 0; // driver evictions already reported as memory pressure
  trace::TraceReader reader_;
  Engine engine_;
  Stats stats_;
  MemoryModel memory_;
  LinkDirection to_gpu_;
  LinkDirection to_host_;
  Migrator migrator_;
  FaultServicer servicer_;
  KernelRunner runner_;
  std::unique_ptr<policies::IPolicy> policy_;
  ProgressReporter* progress_ = nullptr;
  bool check_invariants_ = false;

  trace::Record pending_;
  bool have_pending_ = false;
  bool started_ = false;
  bool finished_ = false;
  Time delay_ = 0;           // simulated minus recorded time, carried from kernel to kernel
  Time migrations_done_ = 0; // budget mode: when the migrations issued so far end
  Time end_time_ = 0;
  uint64_t kernel_index_ = 0;
  std::unordered_map<uint64_t, trace::AllocRecord> live_;
  std::map<Addr, Bytes> device_ranges_;
  policies::Actions actions_;
};

} // namespace faultline
