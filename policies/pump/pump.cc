// pump: PUMP's launch-time prefetching (ailabstw/PUMP, ASP-DAC 2022). Before each launch, every
// block its arguments name is prefetched whole; the prefetch waits for older kernels to finish
// while the distinct bytes referenced by unfinished kernels plus the new ones would exceed
// factor x GPU memory. Eviction stays the driver's. Source: ailabstw/PUMP @ 76425c49, prefetch.cpp.
//
// On an issue-time trace the simulator's CPU runs ahead of the GPU and PUMP hears each launch as
// it is issued. On a serial trace (and in the live replay) the host launches each kernel as the
// one before it ends, so PUMP hears a launch only as its kernel starts and the throttle never has
// an older kernel to wait for. With `lead_launches` L > 0 (a what-if) it hears launches as a CPU
// running ahead would: at kernel k's start, every launch up to k + L that no synchronisation or
// host access separates from k. Those launches' argument blocks are read from the trace (the
// launches alone, never accesses).
#include "policies/registry.h"
#include "sim/config/schema.h"
#include "sim/core/error.h"
#include "sim/trace/step_repeater.h"

#include <deque>
#include <map>
#include <unordered_map>

namespace faultline::policies {
namespace {

// Blocks referenced by a kernel: (start, bytes) pairs, distinct.
using Blocks = std::map<Addr, Bytes>;

struct Params {
  double memory_factor_percent = 0;
  uint64_t lead_launches = 0;
};

const config::Fields<Params>& fields() {
  static const config::Fields<Params> fields = {
      config::field(&Params::memory_factor_percent, "memory_factor_percent",
                    "the factor; 0 chooses as PUMP does (80 with allocator blocks, 60 without)")
          .unit("percent")
          .range(0, 100),
      config::field(&Params::lead_launches, "lead_launches",
                    "launches the CPU has made beyond the kernel starting, up to the next "
                    "synchronisation or host access (PUMP hears them early; a what-if for serial "
                    "traces and the replay); 0: each launch is heard when the CPU issues it")
          .unit("launches"),
  };
  return fields;
}
FAULTLINE_REGISTER_SCHEMA("policy.pump", "`policy.params` of policy pump", fields);

class Pump : public IPolicy {
public:
  Pump(const nlohmann::json& params, const std::string& where)
      : Pump(config::read_object(params, where, "$.policy.params", fields())) {}

  void on_start(const StartEvent& e, Actions&) override {
    capacity_ = e.gpu_capacity;
    gpu_ = gpu_processor(e.gpu);
    if (lead_ > 0) read_launches(e.trace_path, e.iterations);
  }

  // PUMP's factor follows what it knows: 80% with the framework's allocation records, 60%
  // without (global.cpp, ULMS_GPU_MEMORY_FACTOR).
  void on_alloc(const AllocEvent& e, Actions&) override { framework_blocks_ |= e.block; }

  void on_kernel_launch(const LaunchEvent& e, Actions& out) override {
    if (lead_ == 0) {
      waiting_.push_back({e.kernel, blocks_of(e.args)});
    } else {
      if (e.kernel >= launches_.size())
        throw SimulationError("pump: kernel " + std::to_string(e.kernel) +
                              " launched, but the trace read ahead holds " +
                              std::to_string(launches_.size()));
      // The CPU has launched up to k + L, but not past a synchronisation.
      const uint64_t last = std::min(e.kernel + lead_, launches_.size() - 1);
      for (heard_ = std::max(heard_, e.kernel);
           heard_ <= last && epoch_[heard_] == epoch_[e.kernel]; ++heard_)
        waiting_.push_back({heard_, std::move(launches_[heard_])});
    }
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

  explicit Pump(const Params& p) : factor_percent_(p.memory_factor_percent), lead_(p.lead_launches) {}

  static Blocks blocks_of(const std::vector<Range>& args) {
    Blocks blocks;
    for (const Range& r : args) blocks[r.start] = std::max(blocks[r.start], r.bytes);
    return blocks;
  }

  // Every launch's argument blocks as the backend will name them (the records it plays), and
  // the number of synchronisations and host accesses before it.
  void read_launches(const std::string& path, uint64_t iterations) {
    trace::StepRepeater reader(path, iterations);
    trace::Record r;
    std::unordered_map<uint64_t, Range> live;
    uint64_t barriers = 0;
    while (reader.next(r)) {
      switch (r.type) {
      case trace::RecordType::kAlloc:
        live[r.alloc.id] = {r.alloc.address, r.alloc.size};
        break;
      case trace::RecordType::kFree:
        live.erase(r.free.id);
        break;
      case trace::RecordType::kKernel: {
        std::vector<Range> args;
        for (uint64_t id : r.kernel.args) {
          auto it = live.find(id);
          if (it != live.end()) args.push_back(it->second);
        }
        launches_.push_back(blocks_of(args));
        epoch_.push_back(barriers);
        break;
      }
      case trace::RecordType::kSync:
      case trace::RecordType::kHostAccess:
        ++barriers;
        break;
      default:
        break;
      }
    }
  }

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
  uint64_t lead_;
  std::vector<Blocks> launches_; // with a lead: each launch's blocks, from the trace
  std::vector<uint64_t> epoch_;   // with a lead: barriers (syncs, host accesses) before each
  uint64_t heard_ = 0;            // with a lead: launches heard so far
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
