// pump: PUMP's launch-time prefetching (ailabstw/PUMP, ASP-DAC 2022). Before each launch, every
// block its arguments name is prefetched whole; the prefetch waits for older kernels to finish
// while the distinct bytes referenced by unfinished kernels plus the new ones would exceed
// factor x GPU memory. Eviction stays the driver's. Source: ailabstw/PUMP @ 76425c49, prefetch.cpp.
#include "policies/registry.h"
#include "sim/config/schema.h"
#include "sim/core/error.h"

#include <deque>
#include <map>

namespace faultline::policies {
namespace {

// Blocks referenced by a kernel: (start, bytes) pairs, distinct.
using Blocks = std::map<Addr, Bytes>;

struct Params {
  double memory_factor_percent = 0;
};

const config::Fields<Params>& fields() {
  static const config::Fields<Params> fields = {
      config::field(&Params::memory_factor_percent, "memory_factor_percent",
                    "the factor; 0 chooses as PUMP does (80 with allocator blocks, 60 without)")
          .unit("percent")
          .range(0, 100),
  };
  return fields;
}
FAULTLINE_REGISTER_SCHEMA("policy.pump", "`policy.params` of policy pump", fields);

class Pump : public IPolicy {
public:
  Pump(const nlohmann::json& params, const std::string& where)
      : factor_percent_(
            config::read_object(params, where, "$.policy.params", fields()).memory_factor_percent) {
  }

  void on_start(const StartEvent& e, Actions&) override {
    capacity_ = e.gpu_capacity;
    gpu_ = gpu_processor(e.gpu);
  }

  // PUMP's factor follows what it knows: 80% with the framework's allocation records, 60%
  // without (global.cpp, ULMS_GPU_MEMORY_FACTOR).
  void on_alloc(const AllocEvent& e, Actions&) override { framework_blocks_ |= e.block; }

  void on_kernel_launch(const LaunchEvent& e, Actions& out) override {
    Blocks blocks;
    for (const Range& r : e.args) blocks[r.start] = std::max(blocks[r.start], r.bytes);
    waiting_.push_back({e.kernel, std::move(blocks)});
    issue_ready(out);
  }

  void on_kernel_end(const KernelEndEvent& e, Actions& out) override {
    while (!running_.empty() && running_.front().kernel <= e.kernel) {
      release(running_.front().blocks);
      running_.pop_front();
    }
    issue_ready(out);
  }

private:
  struct Launch {
    uint64_t kernel;
    Blocks blocks;
  };

  Bytes budget() const {
    const double percent = factor_percent_ > 0 ? factor_percent_ : framework_blocks_ ? 80 : 60;
    return static_cast<Bytes>(static_cast<double>(capacity_) * percent / 100.0);
  }

  Bytes new_bytes(const Blocks& blocks) const {
    Bytes n = 0;
    for (const auto& [start, bytes] : blocks)
      if (!held_.count(start)) n += bytes;
    return n;
  }

  // In launch order: a launch's prefetch goes out once it fits under the budget, or when no
  // older kernel is left to wait for.
  void issue_ready(Actions& out) {
    while (!waiting_.empty()) {
      Launch& next = waiting_.front();
      const bool fits = held_bytes_ + new_bytes(next.blocks) <= budget();
      if (!fits && !running_.empty()) return;
      for (const auto& [start, bytes] : next.blocks) {
        out.push_back({ActionKind::kPrefetch, {start, bytes}, gpu_});
        if (held_[start].references++ == 0) {
          held_[start].bytes = bytes;
          held_bytes_ += bytes;
        }
      }
      running_.push_back(std::move(next));
      waiting_.pop_front();
    }
  }

  void release(const Blocks& blocks) {
    for (const auto& [start, bytes] : blocks) {
      auto it = held_.find(start);
      if (--it->second.references == 0) {
        held_bytes_ -= it->second.bytes;
        held_.erase(it);
      }
    }
  }

  struct Held {
    Bytes bytes = 0;
    unsigned references = 0;
  };

  double factor_percent_;
  bool framework_blocks_ = false;
  Bytes capacity_ = 0;
  ProcessorId gpu_ = gpu_processor(0);
  std::deque<Launch> waiting_; // launched, prefetch not yet issued
  std::deque<Launch> running_; // prefetch issued, kernel not yet finished
  std::map<Addr, Held> held_;  // blocks referenced by running_, with reference counts
  Bytes held_bytes_ = 0;
};

} // namespace

FAULTLINE_REGISTER_POLICY(Pump, "pump");

} // namespace faultline::policies
