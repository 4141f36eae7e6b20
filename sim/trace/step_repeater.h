// A trace run for a chosen number of training steps (iterations): the first N of its own
// steps, or all of them and then its last step again until N have run. The simulator's jobs,
// the live replay and the oracle read records through it, so all three see the same records.
#pragma once

#include "sim/trace/reader.h"

#include <deque>
#include <memory>
#include <unordered_map>
#include <unordered_set>

namespace faultline::trace {

// What repeating the last step took besides copying its records; results report it.
struct RepeatStats {
  uint64_t repetitions = 0;    // passes of the last step after the trace's own
  Time period_ns = 0;          // time shift from one pass of the step to the next
  uint64_t paired_frees = 0;   // frees of an id from before the step given to the carried
                               // instance of the previous pass
  uint64_t early_frees = 0;    // carried or held instances freed before an allocation over them
  uint64_t skipped_frees = 0;  // frees with nothing live left to free
  uint64_t held_frees = 0;     // tear-down frees moved from the trace's step to the final pass
  uint64_t skipped_allocs = 0; // blocks whose segment is not live in a pass
  uint64_t dropped_args = 0;   // kernel arguments naming nothing live in a pass
};

// The last step as repetition needs it, from one streaming pass over the trace.
struct LastStepPlan {
  uint64_t first = 0; // the step's first timed record
  Time period_ns = 0;
  uint64_t max_id = 0;
  // Frees in the step of ids allocated before it, by position in the step: paired with a
  // carried allocation (allocated in the step, still live at the trace's end, same kind and
  // size: the loss tensor of step k freed during step k+1), or tear-down (no pair).
  std::unordered_map<uint64_t, uint64_t> paired; // position -> carried original id
  std::unordered_map<uint64_t, uint64_t> paired_by_id;
  std::unordered_set<uint64_t> teardown;
};

LastStepPlan plan_last_step(const std::string& path);

// Contract: next() returns timed records in order, as TraceReader does, valid as a trace
// (ids unique among live allocations, frees and kernel arguments name live ones, blocks live
// segments, times non-decreasing):
//  - iterations <= the trace's steps S (0 means S): the trace up to the end of step N - 1.
//  - more: the whole trace, then the last step again, N - S times. Pass k's times are shifted
//    by k x period (period: the last step's start minus the previous step's, or, for one step,
//    the end of its records minus its start), never earlier than the record before. The same
//    addresses are reused; allocations made in the step get fresh ids each pass (persistent
//    ones keep theirs, block segments and kernel arguments follow). An allocation of the step
//    that is still live from the previous pass when the step allocates over its addresses is
//    freed first (a free record). A free of an id from before the step is given the carried
//    instance of the previous pass it pairs with (LastStepPlan), or, without a pair (tear-down:
//    the model freed at the trace's end), happens only in the final pass, unless the step
//    allocates over it first (then it is freed there, as a carried instance is).
// Streams: each pass re-reads the file and skips to the step, holding no step in memory.
class StepRepeater {
public:
  StepRepeater(const std::string& path, uint64_t iterations = 0);
  ~StepRepeater();

  bool next(Record& record);
  const nlohmann::json& metadata() const { return metadata_; }
  const std::string& path() const { return path_; }
  uint64_t records() const { return returned_; } // returned so far
  // Where the source of the last returned record lies, with the pass of the step.
  std::string where() const;
  // The step of the last returned record (-1: set-up before step 0); repetitions continue the
  // count (the trace's last step is S - 1, its first repetition S).
  int64_t step() const { return step_; }
  uint64_t iterations() const { return iterations_; }
  uint64_t captured_steps() const { return reader_->steps().size(); }
  Timeline timeline() const { return reader_->timeline(); }
  uint32_t version() const { return reader_->version(); }
  // The program's own time for step `step` (repetitions: the last step's); 0 when the trace
  // does not say.
  Time program_step_ns(int64_t step) const;
  const RepeatStats& repeat_stats() const { return stats_; }

private:
  bool fetch(Record& r);
  bool start_pass();
  bool transform(Record& r);
  bool transform_alloc(AllocRecord& a);
  bool transform_free(FreeRecord& f, uint64_t position);
  void transform_args(KernelRecord& k);
  uint64_t resolve(uint64_t original) const;
  void free_overlapping(const AllocRecord& a);
  void track(const Record& r);
  void emit_free(uint64_t id, Time time);

  std::string path_;
  uint64_t iterations_;
  nlohmann::json metadata_;
  std::unique_ptr<TraceReader> reader_;
  std::unique_ptr<LastStepPlan> plan_; // only when repeating
  uint64_t pass_ = 0;                  // 0: the trace's own records
  uint64_t returned_ = 0;
  int64_t step_ = -1;
  bool done_ = false;
  Time last_time_ = 0;
  uint64_t next_id_ = 0;
  std::unordered_map<uint64_t, AllocRecord> live_;  // emitted id -> record as emitted
  std::unordered_map<uint64_t, uint64_t> local_;    // this pass: original -> id (0: skipped)
  std::unordered_map<uint64_t, uint64_t> previous_; // last pass's carried: original -> id
  std::vector<uint64_t> carried_;                   // last pass's, still live at its end
  std::vector<uint64_t> waiting_;                   // ids whose free waits for the final pass
  std::deque<FreeRecord> early_;                    // frees to return before held_
  Record held_;
  bool have_held_ = false;
  RepeatStats stats_;
};

} // namespace faultline::trace
