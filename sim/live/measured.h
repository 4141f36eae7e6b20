// What the live replay measures as it runs (sim/live/replay.cc): its clock, its running totals,
// a training step's row, and the totals under the simulator's result fields.
#pragma once

#include "sim/core/types.h"
#include "sim/live/device.h"
#include "sim/run/results.h"

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>

namespace faultline::live {

// Wall time with pauses (allocation, draining) left out.
class Clock {
public:
  Clock() : start_(now()) {}
  static Time now() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  void pause() {
    paused_at_ = now();
    is_paused_ = true;
  }
  void resume() {
    paused_ += now() - paused_at_;
    is_paused_ = false;
  }
  bool paused() const { return is_paused_; }
  Time elapsed() const { return now() - start_ - paused_; }
  void wait_until(Time elapsed_target) const {
    while (elapsed() < elapsed_target) {
    }
  }

private:
  Time start_, paused_ = 0, paused_at_ = 0;
  bool is_paused_ = false;
};

// One migration call as ReplayRequest::call_log writes it: which, where (trace address), when
// on the replay's clock, and how long the CPU spent inside it.
struct CallRecord {
  // The last kernel launched when it was issued: a prefetch or eviction made for kernel k comes
  // before k's launch, so it is logged under k - 1 (-1: before the first).
  int64_t kernel = -1;
  char kind = '?'; // m: to the GPU, h: to the GPU of pages held, e: to the host, p: to the
                   // neighbour, d: discard
  uint64_t address = 0, bytes = 0;
  Time start_ns = 0, cpu_ns = 0;
};

struct Measured {
  Time compute_ns = 0, stall_ns = 0;
  uint64_t accesses = 0, kernels = 0, budget_evicted_chunks = 0;
  uint64_t policy_evicted_bytes = 0, discarded_bytes = 0, prefetch_bytes = 0;
  uint64_t reported_faults = 0; // faults handed to the policy
  uint64_t unmapped_faults = 0; // CUPTI records outside the trace's managed memory
  uint64_t peer_evicted_chunks = 0, bytes_to_peer = 0, bytes_staged = 0;
  Time policy_ns = 0;        // deciding, untimed
  Time fault_actions_ns = 0; // issuing the actions taken on a kernel's faults, timed
  Time copy_wait_ns = 0;     // kernels waiting on the GPU for the copies issued before them
  nlohmann::json rows = nlohmann::json::array();
  nlohmann::json steps = nlohmann::json::array();     // a row per training step
  nlohmann::json evictions = nlohmann::json::array(); // ReplayRequest::eviction_bytes rows
  std::vector<CallRecord> call_log;                   // ReplayRequest::call_log rows
};

// The migration calls the replay issued between two kernel rows, and the CPU time spent inside
// them: a kernel row's span minus its compute is these calls, the copies they queue and its
// faults, and the per-kernel rows let a fit tell the three apart (issue 21, item 3).
struct MigrationCalls {
  struct Kind {
    uint64_t calls = 0, bytes = 0;
    Time cpu_ns = 0; // inside the call, on the CPU
  };
  // to_gpu_held: prefetches of pages the books hold on the GPU already (a call that moves
  // nothing, unless the driver took them back).
  Kind to_gpu, to_gpu_held, to_host, to_peer, discards;

  template <typename F> void issued(Kind& kind, uint64_t bytes, F&& call) {
    const Time start = Clock::now();
    call();
    kind.cpu_ns += Clock::now() - start;
    kind.calls++;
    kind.bytes += bytes;
  }

  void add_to(nlohmann::json& row) const {
    const std::pair<const char*, const Kind*> kinds[] = {{"to_gpu", &to_gpu},
                                                         {"to_gpu_held", &to_gpu_held},
                                                         {"to_host", &to_host},
                                                         {"to_peer", &to_peer},
                                                         {"discard", &discards}};
    for (const auto& [name, k] : kinds) {
      if (!k->calls) continue;
      const std::string n = name;
      row[n + "_calls"] = k->calls;
      row[n + "_bytes"] = k->bytes;
      row[n + "_cpu_ns"] = k->cpu_ns;
    }
  }
};

// The totals where a training step began, for its row.
struct StepMark {
  Time start = 0;
  Time compute_ns = 0, stall_ns = 0;
  uint64_t kernels = 0, accesses = 0, evictions = 0, prefetch_bytes = 0, reported_faults = 0;
  Counters counters;

  StepMark(Time at, const Measured& m, const Counters& c)
      : start(at), compute_ns(m.compute_ns), stall_ns(m.stall_ns), kernels(m.kernels),
        accesses(m.accesses), evictions(m.budget_evicted_chunks), prefetch_bytes(m.prefetch_bytes),
        reported_faults(m.reported_faults), counters(c) {}

  // The row of the step that began at `from` and ends here; CUPTI's counts only if `counted`.
  StepResult row_since(const StepMark& from, int64_t step, bool counted) const;
};

// What the replay measured as a result document's values, under the simulator's names; CUPTI's
// counts (faults, bytes each way and to the neighbour, dropped records) only if `counted`.
RunTotals totals_of(const Measured& m, const Counters& c, bool counted, Time total,
                    uint64_t skipped, uint64_t peak_chunks);

} // namespace faultline::live
