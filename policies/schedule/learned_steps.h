// What the schedule policy knows of the kernels to come: the training step as it has seen it, one
// entry per launch in step order (the kernel's name; the 2 MB blocks it uses, with their 64 KB
// pages: those of the allocations its arguments name, as PUMP reads them, and those it faulted on
// beyond them), answered as a foresight (policies/oracle/foresight.h) for the oracle's planner.
//
// It learns only from events an online policy sees: step begins, launches and fault batches. A
// step runs unknown (empty answers, or the kernel launched last's arguments) until one step has
// been recorded; from then on each launch is matched by name against the learned step, and while
// they match (following), the kernels ahead are the learned step's from there on, wrapping into
// the next step. A launch updates its learned kernel (new arguments replace the old: a changed
// batch), and faults add to it at once. A launch that matches none of the next `resync` learned
// kernels leaves the schedule for the rest of the step, and that step's recording (keeping the
// faults learned for the kernels it matched) replaces the learned one at the next step begin: a
// new kernel sequence is learned in one step.
#pragma once

#include "policies/oracle/foresight.h"
#include "policies/policy.h"

#include <string>
#include <unordered_map>
#include <vector>

namespace faultline::policies::schedule {

class LearnedSteps final : public oracle::Foresight {
public:
  // `resync`: learned kernels a launch is looked for ahead of the expected one.
  // `arguments_unknown`: off the schedule, answer the kernel launched last with its arguments'
  // blocks (PUMP's knowledge), so that they are prefetched at its launch.
  LearnedSteps(uint64_t resync, bool arguments_unknown)
      : resync_(resync), arguments_unknown_(arguments_unknown) {}

  // A step begins; with `follow` false it runs off the schedule, recorded but not learned from (a
  // probe of what the step costs without it).
  void step_begin(bool follow = true);
  void launch(uint64_t kernel, const std::string& name, const std::vector<Range>& args);
  // Big pages (addresses) the kernel launched last faulted on.
  void faulted(const std::vector<Addr>& big_pages);
  void kernel_end();
  // Whether to plan the kernel launched last while it needs more blocks than fit. The order of
  // its accesses is known only as far as its recorded faults show it; when planning it once made
  // it fault more than the driver alone did, it is left to the driver from then on.
  // Off the schedule, a kernel that does not fit is the driver's.
  bool plans_overflow() const { return following_ && learned_[anchor_position_].plans_overflow; }

  // Whether the step running now has followed the learned step all along.
  bool step_followed() const { return step_followed_ && !deviated_; }

  uint64_t kernels() const override { return kNoEnd; }
  const std::vector<oracle::BlockUse>& blocks(uint64_t kernel) const override;
  const std::vector<oracle::BlockUse>& host_before(uint64_t) const override { return none_; }
  oracle::When next_use(uint64_t block, oracle::When now) const override;
  uint64_t version() const override { return version_; }

private:
  static constexpr uint64_t kNoEnd = ~uint64_t{0}; // an online policy cannot see the run's end
  static constexpr size_t kUnmatched = ~size_t{0};
  struct Kernel {
    std::string name;
    std::vector<Range> args;
    // What it faulted on, with the span of fault batches (counted from its launch) that did
    // when it was recorded: the order of a kernel's accesses, as far as faults show it.
    std::unordered_map<uint64_t, oracle::BlockUse> faulted;
    uint32_t batches = 0;
    uint64_t driver_faults = 0;  // big pages it faulted on when recorded
    uint64_t planned_faults = 0; // and in its last run while followed
    bool plans_overflow = true;
    // Its blocks in order of first fault batch (the arguments' blocks that never faulted first,
    // as used all along the kernel).
    std::vector<oracle::BlockUse> blocks;
    std::unordered_map<uint64_t, size_t> slot; // block -> index in blocks
    size_t matched = kUnmatched;               // (recording) the learned kernel it followed
  };
  static bool add(Kernel& k, const oracle::BlockUse& use);
  static void rebuild(Kernel& k);
  void index(size_t position, bool add);
  void index_learned();
  // The learned step's position of a kernel at or after the anchor.
  size_t position(uint64_t kernel) const;

  uint64_t resync_;
  bool arguments_unknown_;
  uint64_t launched_ = 0; // the kernel launched last
  std::vector<Kernel> learned_;
  std::unordered_map<uint64_t, std::vector<uint32_t>> positions_; // block -> learned positions
  std::vector<Kernel> recording_;                                 // the step running now, as seen
  bool in_step_ = false, deviated_ = false, following_ = false, step_followed_ = false;
  bool paused_ = false; // this step runs off the schedule on purpose
  size_t expected_ = 0; // the learned position the next launch should be at
  uint64_t anchor_kernel_ = 0, anchor_position_ = 0; // the last launch that matched, and where
  std::vector<oracle::BlockUse> none_;
  // Bumped whenever blocks() may answer otherwise for some kernel: all but a launch that follows
  // the one before it at the next learned position, with its learned arguments.
  uint64_t version_ = 0;
};

} // namespace faultline::policies::schedule
