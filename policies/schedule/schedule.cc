// schedule: learns in the first step what each kernel of a training step uses (the blocks its
// arguments name, and what it faults on beyond them, in fault order) and in which order
// (learned_steps.h); from the second step on, plans along that learned schedule as the oracle
// plans along the trace (policies/oracle/planner.h): prefetch what the coming kernels need, in
// order of need, as far ahead as the budget holds; evict the resident block whose learned next use
// is farthest (blocks it knows nothing of first, oldest first: the driver's order); discard, rather
// than write back, a victim's pages in allocator blocks the framework has freed. Off the schedule
// (the first step, a step that left the learned kernel sequence, which is then learned in its
// place) it prefetches each launch's arguments, as PUMP does; a step-time guard hands the run to
// the driver when following the schedule does not pay.
#include "policies/gpu_order.h"
#include "policies/oracle/planner.h"
#include "policies/registry.h"
#include "policies/schedule/learned_steps.h"
#include "sim/config/schema.h"

namespace faultline::policies {
namespace {

constexpr unsigned kPatience = 3;

struct Params {
  // A window of 256 kernels filled the budget with blocks needed long after, and their copies
  // held the link while nearer ones waited: at 50%, 64 kernels ran ResNet-50 in 1.74 s against
  // 2.99, the transformers 7-10% faster, MoE and GraphSAGE within 1% (policies/schedule/README).
  uint64_t lookahead_kernels = 64;
  uint64_t resync_kernels = 16;
  bool discard_freed = true;
  bool prefetch_arguments = true;
  double tolerance = 0.05;
};

const config::Fields<Params>& fields() {
  static const config::Fields<Params> fields = {
      config::field(&Params::lookahead_kernels, "lookahead_kernels",
                    "how many learned kernels ahead the prefetch window may reach")
          .unit("kernels"),
      config::field(&Params::resync_kernels, "resync_kernels",
                    "how many learned kernels ahead a launch that does not match the expected one "
                    "is looked for before the step counts as new")
          .unit("kernels"),
      config::field(
          &Params::discard_freed, "discard_freed",
          "discard victims' pages in freed allocator blocks instead of writing them back"),
      config::field(&Params::prefetch_arguments, "prefetch_arguments",
                    "off the schedule (the first step, a new kernel sequence), prefetch the "
                    "blocks each launch's arguments name, as PUMP does"),
      config::field(&Params::tolerance, "tolerance",
                    "how much slower than a step off the schedule three steps in a row that follow "
                    "it may run before a step off it is tried, and how much faster that step must "
                    "be for the policy to leave the run to the driver")
          .unit("fraction")
          .at_least(0),
  };
  return fields;
}
FAULTLINE_REGISTER_SCHEMA("policy.schedule", "`policy.params` of policy schedule", fields);

class Schedule : public IPolicy {
public:
  Schedule(const nlohmann::json& params, const std::string& where)
      : p_(config::read_object(params, where, "$.policy.params", fields())),
        learned_(p_.resync_kernels, p_.prefetch_arguments),
        planner_(p_.lookahead_kernels, p_.discard_freed) {}

  void on_start(const StartEvent& e, Actions&) override { planner_.start(e, learned_); }
  // Step times tell whether following the schedule pays. When kPatience steps in a row that
  // followed it ran slower than the last step that did not by more than the tolerance, the next
  // step runs off the schedule as a probe (the first step, all first touches, is no fair
  // reference); if the probe beats the last followed step by the tolerance, the policy leaves the
  // rest of the run to the driver, else it follows again with the probe as the reference.
  void on_step_begin(const StepEvent& e, Actions&) override {
    bool probe = false;
    if (step_began_) {
      const auto took = static_cast<double>(e.now - step_start_);
      if (!learned_.step_followed()) {
        if (probing_ && took * (1 + p_.tolerance) < followed_step_) driver_only_ = true;
        probing_ = false;
        off_schedule_step_ = took;
      } else {
        followed_step_ = took;
        const bool slower =
            off_schedule_step_ > 0 && took > off_schedule_step_ * (1 + p_.tolerance);
        slow_steps_ = slower ? slow_steps_ + 1 : 0;
        probe = probing_ = slow_steps_ >= kPatience;
        if (probe) slow_steps_ = 0;
      }
    }
    step_began_ = true;
    step_start_ = e.now;
    learned_.step_begin(!probe);
  }

  void on_alloc(const AllocEvent& e, Actions&) override { planner_.alloc(e); }
  void on_free(const FreeEvent& e, Actions&) override { planner_.free(e); }

  bool observes_faults() const override { return true; }

  void on_fault_batch(const FaultBatchEvent& e, Actions& out) override {
    learned_.faulted(e.faults);
    Actions ignored; // the planner keeps its books; the driver has the run
    planner_.fault_batch(e, driver_only_ ? ignored : out);
  }

  void on_memory_pressure(const MemoryPressureEvent&, Actions&) override {
    planner_.memory_pressure();
  }

  // It learns and plans from the kernel the GPU runs: launches are heard in its order.
  void on_kernel_launch(const LaunchEvent& e, Actions& out) override {
    gpu_.launch(e, [&](const LaunchEvent& l) { start(l, out); });
  }

  void on_kernel_end(const KernelEndEvent& e, Actions& out) override {
    learned_.kernel_end();
    planner_.kernel_end(e, out);
    gpu_.kernel_end(e, [&](const LaunchEvent& l) { start(l, out); });
  }

private:
  void start(const LaunchEvent& e, Actions& out) {
    learned_.launch(e.kernel, e.name ? *e.name : std::string(), e.args);
    planner_.plan_overflowing_kernels(learned_.plans_overflow());
    if (!driver_only_) planner_.kernel_launch(e, out);
  }

  LaunchesInGpuOrder gpu_;
  Params p_;
  schedule::LearnedSteps learned_;
  oracle::Planner planner_;
  bool step_began_ = false, driver_only_ = false, probing_ = false;
  Time step_start_ = 0;
  double off_schedule_step_ = 0, followed_step_ = 0; // the last step's time of each kind, in ns
  unsigned slow_steps_ = 0; // steps in a row that followed the schedule and ran slower
};

} // namespace

FAULTLINE_REGISTER_POLICY(Schedule, "schedule");

} // namespace faultline::policies
