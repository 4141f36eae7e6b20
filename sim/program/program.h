// The policy host inside a real program (`faultline run`): the program's own calls become the
// policy's events, and its actions run on the GPU through the injection library (seam.h). The
// third backend of the policy host (sim/host/policy_host.h), beside the simulator's Job and the
// live replay: the same policy code, the same budget rules (sim/host/budget.h).
//
// The budget: with a trace of the same program, the books count the pages its operation of the
// same number touched (trace_view.h), as the replay's do, in the trace's addresses (the policy
// hears the trace's operation too); without one, what a kernel will touch
// is known only as the allocations its arguments name, and the books count those whole. Before a
// launch, what it needs must fit, and the oldest resident chunks it does not need go back to the
// host (the budget's rule, as in the replay), on the migration stream, which the launch's stream
// then waits for (and every other stream at its next launch). Pages a kernel touches beyond that
// fault on demand, unseen by the books. (The GPU's own count at the program's synchronisations,
// steps[].gpu_used_peak_bytes, is not the residency: the driver keeps a block's chunk after its
// pages leave.) A kernel whose needs alone exceed the budget stops the program with an error.
//
// The books at a launch are the GPU's memory once it reaches that kernel, and the policy's
// evictions wait for the kernels launched before, so a launch is where the policy's actions take
// effect: by default it hears each kernel's end and faults there, at the program's next call
// (config.kernel_ends), when the kernel is on its stream and what the policy does is ordered
// after it.
//
// Contract: one call at a time (the injection library holds its lock); Error or
// SimulationError from a call names the policy and the launch, and the run cannot go on.
#pragma once

#include "sim/host/policy_host.h"
#include "sim/host/residency.h"
#include "sim/program/address_map.h"
#include "sim/program/config.h"
#include "sim/program/seam.h"
#include "sim/program/trace_view.h"

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace faultline::program {

// Nanoseconds since the run began; tests set the time by hand.
class RunClock {
public:
  virtual ~RunClock() = default;
  virtual Time now() const;

private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

class ProgramRun : public host::Backend {
public:
  ProgramRun(RunConfig config, Device& device, uint64_t gpu_bytes, const RunClock& clock);

  void alloc(uint64_t address, uint64_t bytes, bool managed);
  void free(uint64_t address);
  void launch(const std::string& name, const std::vector<uint64_t>& words, uint64_t stream);
  // The GPU has run the first `count` kernels: their ends reach the policy where
  // config.kernel_ends is "gpu" (with "launch" each kernel's end reached it at the call after
  // its launch).
  void kernels_done(uint64_t count);
  void synced();
  void step();
  void range(bool on); // cudaProfilerStart or Stop
  // The measurements: "config" (the budget in bytes and chunks), "results" and "steps" with the
  // result document's names (sim/run/results.h).
  nlohmann::json finish();

  // host::Backend
  Bytes free_bytes(unsigned gpu) const override;
  ProcessorId holder(Addr address) const override;
  std::vector<Addr> oldest_blocks(unsigned gpu, size_t n) const override;
  void prefetch(const policies::Range& range, Time now) override;
  void stage(const policies::Range& range, unsigned peer, Time now) override;
  void evict(const policies::Range& range, ProcessorId target, Time now) override;
  void discard(const policies::Range& range, Time now) override;
  void advise(const policies::Range& range, policies::Advice advice, Time now) override;
  void deciding(bool started) override;

  uint64_t kernels() const { return kernels_; }
  const host::Residency& residency() const { return residency_; }

private:
  struct Allocation {
    uint64_t id = 0, bytes = 0;
    bool managed = true;
    bool told = true; // the policy heard of it (not when it lies beyond the trace's)
    Addr book = 0;    // its address in the books
    std::vector<host::ChunkPages> chunks; // managed: its pages in the books, by chunk
  };
  struct Pending {
    uint64_t kernel = 0;
    std::vector<Addr> absent; // 64 KB big pages the books did not hold at its launch
  };
  // Running totals, and their values where the open step began.
  struct Totals {
    int64_t kernels = 0, faults = 0, prefetch_bytes = 0, evicted_bytes = 0, evictions = 0,
            discarded_bytes = 0, policy_evicted_bytes = 0, reported_faults = 0;
  };

  Time now() const { return clock_.now(); }
  // The books count chunks of the trace's addresses when there is a trace (so that a budget of
  // the trace's footprint holds what the trace's operations touch, however the run's segments
  // lie on 2 MB), else the run's own. A run's allocation past the trace's is booked at its own
  // address moved by kApart, where no trace address lies; the policy never hears of it.
  static constexpr Addr kApart = Addr{1} << 60;
  // For each live managed allocation piece of [start, start + bytes): f(address, bytes).
  template <typename F> void for_each_managed(Addr start, Bytes bytes, F f) const;
  // For each piece of the books' [start, start + bytes) that a live managed allocation holds:
  // f(books address, live address, bytes).
  template <typename F> void for_each_piece(Addr start, Bytes bytes, F f) const;
  // A books address as the policy's: the same, or kNoAddress past the trace's allocations.
  static Addr to_policy(Addr book) { return book < kApart ? book : AddressMap::kNoAddress; }
  // Evictions and discards wait for the kernels launched so far (the CPU runs ahead of them).
  void after_launched();
  void host_touched(Addr start, Bytes bytes);
  // The trace's operation #index, which must be the launch `name`: Error otherwise.
  const TraceView::Operation* traced_operation(uint64_t index, const std::string& name);
  // The policy hears the faults and ends of the pending kernels before kernel `count`.
  void end_kernels(uint64_t count);
  // Every call of the program's begins here: the time, and with config.kernel_ends "launch" the
  // ends of the kernels launched before it.
  Time enter();
  const std::pair<const uint64_t, Allocation>* find(Addr address) const;
  static std::vector<host::ChunkPages> chunks_of(Addr start, Bytes bytes);
  template <typename F> void make_room(const std::vector<host::ChunkPages>& needed, const F& what);
  // Sends the live pages of the books' [start, start + bytes) to the host, after the kernels
  // launched so far; evict_piece() one live piece of it.
  void evict_range(Addr start, Bytes bytes);
  void evict_piece(Addr live, Bytes bytes);
  uint64_t leave_books(Addr book, Bytes bytes);
  void admit(const std::vector<host::ChunkPages>& pages);
  void open_step(Time at, const Totals& base);
  void close_step(Time at, const Totals& end);

  RunConfig config_;
  Device& device_;
  const RunClock& clock_;
  host::Residency residency_;
  std::optional<AddressMap> map_;   // with a trace: the policy's addresses are the trace's
  std::optional<TraceView> traced_; // with a trace: what it says of each launch
  std::unordered_map<std::string, std::string> trace_names_; // the run's names as a trace's
  host::PolicyHost host_;
  bool ends_at_launch_;    // config.kernel_ends "launch"
  bool launching_ = false; // inside launch(): its kernel is not on its stream yet
  std::map<Addr, Allocation> live_;
  uint64_t next_id_ = 1, kernels_ = 0, device_bytes_ = 0, device_bytes_at_start_ = 0;
  uint64_t ordered_after_ = 0; // kernels the migration stream was last made to wait for
  std::deque<Pending> pending_;
  std::vector<uint64_t> launch_ids_; // a launch's buffers, kept for the next
  std::vector<const Allocation*> named_;
  std::vector<host::ChunkPages> launch_needed_;
  // Evictions and discards made so far, and how many of them each stream's launches last waited
  // for (by the stream's handle).
  uint64_t migrations_ = 0;
  std::unordered_map<uint64_t, uint64_t> stream_waited_;
  Totals totals_, step_base_;
  uint64_t step_migration_base_ = 0; // device_.migration_gpu_ns() at the step's start
  // Steps: a boundary (the start, each step mark) begins a step when a kernel follows it, as the
  // capture counts them; the copies between the boundary and that kernel are the new step's, and
  // a copy with no kernel after it (a final loss.item()) stays in the step it follows.
  std::optional<Time> boundary_ = Time{0};
  Totals boundary_totals_;        // totals_ at the boundary
  bool boundary_is_start_ = true; // the boundary is the run's start, not a mark
  bool step_open_ = false, in_range_ = true;
  int64_t step_ = -1, next_step_ = 0;
  Time step_start_ = 0, last_call_ = 0, decision_start_ = 0, decision_ns_ = 0, start_ns_ = 0;
  uint64_t step_peak_chunks_ = 0, gpu_used_at_start_ = 0, step_gpu_peak_ = 0, gpu_peak_ = 0;
  bool gpu_used_known_ = false;
  nlohmann::json steps_ = nlohmann::json::array();
};

} // namespace faultline::program
