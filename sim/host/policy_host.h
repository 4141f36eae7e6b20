// The policy host: the one place where trace records become policy events and a policy's
// actions reach memory. Its two backends are the simulator's Job (sim/run/job.h), which executes
// actions on the memory model, and the live Replay (sim/live/replay.cc), which executes them on
// a real GPU; both hand it the same records, so a policy sees the same events in both.
#pragma once

#include "policies/policy.h"
#include "sim/trace/format.h"

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

namespace faultline::host {

// What executes a policy's actions. Ranges are the trace's addresses (a backend maps them to
// its own and skips what no live managed allocation holds); targets were checked by the host.
// A backend is also the policy's view of memory.
class Backend : public policies::MemoryView {
public:
  // Host or neighbour pages of the range to the job's own GPU.
  virtual void prefetch(const policies::Range& range, Time now) = 0;
  // The range's host pages to neighbour GPU `peer` ahead of use (a multi-path prefetch's
  // first leg), while the neighbour has room to spare.
  virtual void stage(const policies::Range& range, unsigned peer, Time now) = 0;
  // Off the job's GPU to `target`: the host, or a neighbour GPU while it has room.
  virtual void evict(const policies::Range& range, ProcessorId target, Time now) = 0;
  virtual void discard(const policies::Range& range, Time now) = 0;
  virtual void advise(const policies::Range& range, policies::Advice advice, Time now) = 0;
  // Around every policy call: the live replay keeps deciding off its clock.
  virtual void deciding(bool /*started*/) {}
};

// Contract: each call builds one event (or the batches of one hand-over), calls the policy and
// executes its actions through the backend before returning, in the order the policy gave
// them. The host keeps the trace's live allocations (for a launch's argument blocks); the
// backend keeps everything about memory. `where` names the policy's config for errors.
class PolicyHost {
public:
  PolicyHost(Backend& backend, std::string policy, nlohmann::json params, std::string where);
  ~PolicyHost();

  // Once, before the first record; `event.memory` is set to the backend. Also after restart().
  void start(policies::StartEvent event);
  // A fresh policy, as for a new run of the program; the live allocations stay until freed.
  void restart();

  void step_begin(uint64_t step, Time now);
  void alloc(const trace::AllocRecord& record, Time now);
  // The allocation leaves the host's table; the policy hears of it. Returns its record.
  // Throws SimulationError for an id that is not live.
  trace::AllocRecord free(uint64_t id, Time now);
  // The kernel's arguments are allocation ids; those not live are left out.
  void launch(uint64_t kernel, const std::string& name, const std::vector<uint64_t>& args,
              Time now);
  void kernel_end(uint64_t kernel, Time now);
  // Faults as the driver services them: one batch (64 KB big page addresses, ascending, distinct),
  // and, when the batch made the driver evict, the pressure it felt.
  void fault_batch(const policies::FaultBatchEvent& batch,
                   const policies::MemoryPressureEvent* pressure = nullptr);
  // A kernel's faults handed over at its end, as the driver hands them over
  // (policies::driver_batches): 64 KB big page addresses in the order found.
  void kernel_faults(unsigned gpu, const std::vector<Addr>& faults, Time now);

  bool observes_faults() const { return policy_->observes_faults(); }
  bool prefetches_behind_faults() const { return policy_->prefetches_behind_faults(); }
  // The trace's live allocations by id.
  const std::unordered_map<uint64_t, trace::AllocRecord>& live() const { return live_; }

private:
  template <class F> void call(F&& f, Time now);
  void execute(Time now);
  [[noreturn]] void refuse(const char* verb, ProcessorId target) const;

  Backend& backend_;
  std::string name_, where_;
  nlohmann::json params_;
  std::unique_ptr<policies::IPolicy> policy_;
  unsigned gpu_ = 0, gpus_ = 1;
  std::unordered_map<uint64_t, trace::AllocRecord> live_;
  policies::Actions actions_;
};

} // namespace faultline::host
