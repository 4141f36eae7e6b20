// oracle: an offline bound with perfect knowledge of the trace (future.h), planned by planner.h:
// the pages the coming accesses need, as far ahead as fit, prefetched in order of need; Belady's
// MIN at the level of accesses for room; pages the host touches sent back before it does. It
// reads the trace itself; no online policy can know what it knows.
#include "policies/gpu_order.h"
#include "policies/oracle/future.h"
#include "policies/oracle/planner.h"
#include "policies/registry.h"
#include "sim/config/schema.h"

#include <memory>

namespace faultline::policies {
namespace {

struct Params {
  uint64_t max_lookahead_kernels = 256;
  bool discard_freed = false;
};

const config::Fields<Params>& fields() {
  static const config::Fields<Params> fields = {
      config::field(&Params::max_lookahead_kernels, "max_lookahead_kernels",
                    "how many kernels ahead the window may reach")
          .unit("kernels"),
      config::field(&Params::discard_freed, "discard_freed",
                    "discard victims' pages in freed allocator blocks instead of writing them "
                    "back (as deepum and schedule do; off: the bound of the live fidelity runs)"),
  };
  return fields;
}
FAULTLINE_REGISTER_SCHEMA("policy.oracle", "`policy.params` of policy oracle", fields);

class Oracle : public IPolicy {
public:
  Oracle(const nlohmann::json& params, const std::string& where)
      : Oracle(config::read_object(params, where, "$.policy.params", fields())) {}
  explicit Oracle(const Params& p) : planner_(p.max_lookahead_kernels, p.discard_freed) {}

  void on_start(const StartEvent& e, Actions&) override {
    future_ = std::make_unique<oracle::Future>(e.trace_path, e.iterations);
    planner_.start(e, *future_);
  }
  void on_alloc(const AllocEvent& e, Actions&) override { planner_.alloc(e); }
  void on_free(const FreeEvent& e, Actions&) override { planner_.free(e); }
  bool observes_faults() const override { return true; }
  void on_fault_batch(const FaultBatchEvent& e, Actions& out) override {
    planner_.fault_batch(e, out);
  }
  // The driver evicted blocks of its own choosing: learn which.
  void on_memory_pressure(const MemoryPressureEvent&, Actions&) override {
    planner_.memory_pressure();
  }
  // The plan runs from the kernel the GPU runs: launches are heard in its order.
  void on_kernel_end(const KernelEndEvent& e, Actions& out) override {
    planner_.kernel_end(e, out);
    gpu_.kernel_end(e, [&](const LaunchEvent& l) { planner_.kernel_launch(l, out); });
  }
  void on_kernel_launch(const LaunchEvent& e, Actions& out) override {
    gpu_.launch(e, [&](const LaunchEvent& l) { planner_.kernel_launch(l, out); });
  }

private:
  LaunchesInGpuOrder gpu_;
  std::unique_ptr<oracle::Future> future_;
  oracle::Planner planner_;
};

} // namespace

FAULTLINE_REGISTER_POLICY(Oracle, "oracle");

} // namespace faultline::policies
