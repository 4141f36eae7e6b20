#include "sim/trace/step_repeater.h"

#include "sim/core/error.h"

#include <algorithm>

namespace faultline::trace {
namespace {

void set_time(Record& r, Time t) {
  switch (r.type) {
  case RecordType::kAlloc:
    r.alloc.time = t;
    break;
  case RecordType::kFree:
    r.free.time = t;
    break;
  case RecordType::kKernel:
    r.kernel.start = t;
    break;
  case RecordType::kHostAccess:
    r.host.time = t;
    break;
  default:
    r.sync.time = t;
    break;
  }
}

Time end_of(const Record& r) {
  return r.type == RecordType::kKernel ? r.kernel.start + r.kernel.duration : r.time();
}

bool is_block(const AllocRecord& a) {
  return a.kind == MemoryKind::kAllocatorBlock;
}

// Blocks overlap blocks, segments segments: a block always lies inside a segment.
bool overlaps(const AllocRecord& a, const AllocRecord& b) {
  return is_block(a) == is_block(b) && a.address < b.address + b.size &&
         b.address < a.address + a.size;
}

struct StepAlloc {
  uint64_t id;
  MemoryKind kind;
  Bytes size;
  bool taken = false; // freed in the step, or paired already
};

struct PreStepFree {
  uint64_t position, id;
  MemoryKind kind;
  Bytes size;
  bool in_steps; // allocated in a step, not in the set-up
};

// Each free of a pre-step id allocated in a step pairs with the first untaken carried
// allocation of its kind and size; the rest are tear-down.
void pair_frees(const std::vector<PreStepFree>& frees, std::vector<StepAlloc>& carried,
                LastStepPlan& plan) {
  for (const PreStepFree& f : frees) {
    auto c = std::find_if(carried.begin(), carried.end(), [&](const StepAlloc& a) {
      return !a.taken && a.kind == f.kind && a.size == f.size;
    });
    if (!f.in_steps || c == carried.end()) {
      plan.teardown.insert(f.position);
      continue;
    }
    c->taken = true;
    plan.paired[f.position] = c->id;
    plan.paired_by_id[f.id] = c->id;
  }
}

} // namespace

LastStepPlan plan_last_step(const std::string& path) {
  TraceReader reader(path);
  LastStepPlan plan;
  plan.first = reader.steps().back().first_record;
  const uint64_t setup_end = reader.steps().front().first_record;
  std::unordered_map<uint64_t, uint64_t> allocated_at; // live id -> its record index
  std::unordered_map<uint64_t, size_t> in_step;        // live id allocated in the step -> slot
  std::vector<StepAlloc> step_allocs;
  std::vector<PreStepFree> pre_step;
  std::unordered_map<uint64_t, AllocRecord> live;
  Time end = 0;
  Record r;
  while (reader.next(r)) {
    const uint64_t index = reader.records() - 1;
    if (index >= plan.first) end = std::max(end, end_of(r));
    if (r.type == RecordType::kAlloc) {
      plan.max_id = std::max(plan.max_id, r.alloc.id);
      live[r.alloc.id] = r.alloc;
      allocated_at[r.alloc.id] = index;
      if (index < plan.first) continue;
      in_step[r.alloc.id] = step_allocs.size();
      step_allocs.push_back({r.alloc.id, r.alloc.kind, r.alloc.size});
    } else if (r.type == RecordType::kFree) {
      const AllocRecord a = live.at(r.free.id);
      const uint64_t at = allocated_at.at(r.free.id);
      live.erase(r.free.id);
      allocated_at.erase(r.free.id);
      if (index < plan.first) continue;
      auto it = in_step.find(r.free.id);
      if (it != in_step.end()) {
        step_allocs[it->second].taken = true;
        in_step.erase(it);
      } else {
        pre_step.push_back({index - plan.first, a.id, a.kind, a.size, at >= setup_end});
      }
    }
  }
  pair_frees(pre_step, step_allocs, plan);
  const std::vector<Step>& steps = reader.steps();
  const Time start = steps.back().start_ns;
  // Two steps may start at the same time (a step of host work alone): never a zero period.
  plan.period_ns =
      std::max<Time>(1, steps.size() >= 2 ? start - steps[steps.size() - 2].start_ns : end - start);
  return plan;
}

StepRepeater::StepRepeater(const std::string& path, uint64_t iterations)
    : path_(path), reader_(std::make_unique<TraceReader>(path)) {
  metadata_ = reader_->metadata();
  const uint64_t steps = reader_->steps().size();
  iterations_ = iterations ? iterations : steps;
  if (iterations_ > steps) {
    plan_ = std::make_unique<LastStepPlan>(plan_last_step(path));
    stats_.period_ns = plan_->period_ns;
    next_id_ = plan_->max_id + 1;
    // Times stay far below overflow: the trace format's own bound on a time step is 2^62.
    const uint64_t passes = iterations_ - steps;
    if (static_cast<uint64_t>(plan_->period_ns) > (uint64_t(1) << 62) / passes)
      throw TraceError(path + ": " + std::to_string(iterations_) + " iterations of a step of " +
                       std::to_string(plan_->period_ns) + " ns run past 2^62 ns");
  }
}

StepRepeater::~StepRepeater() = default;

std::string StepRepeater::where() const {
  if (pass_ == 0) return reader_->where();
  return reader_->where() + " (step " + std::to_string(step_) + ": pass " + std::to_string(pass_) +
         " of the trace's last step repeated)";
}

bool StepRepeater::next(Record& record) {
  for (;;) {
    if (!early_.empty()) {
      record.type = RecordType::kFree;
      record.free = early_.front();
      early_.pop_front();
      ++returned_;
      return true;
    }
    if (have_held_) {
      std::swap(record, held_);
      have_held_ = false;
      ++returned_;
      return true;
    }
    if (done_ || !fetch(held_)) {
      done_ = true;
      return false;
    }
    have_held_ = true;
  }
}

// The next source record, transformed; false when every pass is done.
bool StepRepeater::fetch(Record& r) {
  const uint64_t steps = reader_->steps().size();
  for (;;) {
    if (!reader_->next(r)) {
      if (!plan_ || !start_pass()) return false;
      continue;
    }
    const uint64_t index = reader_->records() - 1;
    if (pass_ == 0) {
      if (iterations_ < steps && index == reader_->steps()[iterations_].first_record) return false;
      step_ = reader_->step();
      if (!plan_ || index < plan_->first) {
        track(r);
        return true;
      }
    }
    if (transform(r)) return true;
  }
}

// Pass-through records (the trace's own, before its last step): only the live set matters,
// and only when passes will follow.
void StepRepeater::track(const Record& r) {
  last_time_ = r.time();
  if (!plan_) return;
  if (r.type == RecordType::kAlloc) live_[r.alloc.id] = r.alloc;
  if (r.type == RecordType::kFree) live_.erase(r.free.id);
}

// The next pass of the last step: what the step allocated and left live is carried into it.
bool StepRepeater::start_pass() {
  if (pass_ + reader_->steps().size() >= iterations_) return false;
  carried_.clear();
  previous_.clear();
  for (const auto& [original, id] : local_) {
    if (id == 0 || !live_.count(id)) continue;
    carried_.push_back(id);
    previous_[original] = id;
  }
  std::sort(carried_.begin(), carried_.end()); // the order early frees come in
  local_.clear();
  ++pass_;
  ++stats_.repetitions;
  reader_ = std::make_unique<TraceReader>(path_);
  step_ = static_cast<int64_t>(reader_->steps().size() - 1 + pass_);
  Record skipped;
  for (uint64_t i = 0; i < plan_->first; ++i) {
    if (!reader_->next(skipped))
      throw TraceError(path_ + ": the trace ended before record " + std::to_string(plan_->first) +
                       " on reading it again: did it change while it was read?");
  }
  return true;
}

// A record of the last step in pass pass_ (0: the trace's own); false drops it.
bool StepRepeater::transform(Record& r) {
  const uint64_t position = reader_->records() - 1 - plan_->first;
  const Time t = std::max(last_time_, r.time() + static_cast<Time>(pass_) * plan_->period_ns);
  set_time(r, t);
  bool keep = true;
  if (r.type == RecordType::kAlloc) keep = transform_alloc(r.alloc);
  if (r.type == RecordType::kFree) keep = transform_free(r.free, position);
  if (r.type == RecordType::kKernel) transform_args(r.kernel);
  if (keep) last_time_ = t;
  return keep;
}

bool StepRepeater::transform_alloc(AllocRecord& a) {
  const uint64_t original = a.id;
  free_overlapping(a); // also when the block is skipped: its copy of the last pass must go
  if (is_block(a)) {
    a.segment = resolve(a.segment);
    if (a.segment == 0) {
      ++stats_.skipped_allocs;
      local_[original] = 0;
      return false;
    }
  }
  a.id = pass_ == 0 && !live_.count(original) ? original : next_id_++;
  local_[original] = a.id;
  live_[a.id] = a;
  return true;
}

// Allocations live only because of the repetition (the previous pass's carried instances, and
// those whose free waits for the final pass) where the step allocates now are freed first: the
// trace's own step had them freed by then.
void StepRepeater::free_overlapping(const AllocRecord& a) {
  auto free_if_over = [&](uint64_t id) {
    auto it = live_.find(id);
    if (it == live_.end() || !overlaps(it->second, a)) return;
    ++stats_.early_frees;
    emit_free(id, a.time);
  };
  for (uint64_t id : carried_) free_if_over(id);
  for (uint64_t id : waiting_) free_if_over(id);
}

void StepRepeater::emit_free(uint64_t id, Time time) {
  early_.push_back(FreeRecord{id, time});
  live_.erase(id);
}

bool StepRepeater::transform_free(FreeRecord& f, uint64_t position) {
  const uint64_t original = f.id;
  const bool final_pass = pass_ + reader_->steps().size() >= iterations_;
  uint64_t id = original;
  bool paired = false;
  if (auto it = local_.find(original); it != local_.end()) {
    id = it->second;
    local_.erase(it);
    if (id == 0) return false; // its allocation was skipped, and counted
  } else if (plan_->teardown.count(position)) {
    if (!final_pass) {
      if (pass_ == 0 && live_.count(id)) waiting_.push_back(id);
      stats_.held_frees += pass_ == 0 ? 1 : 0;
      return false;
    }
  } else if (auto p = plan_->paired.find(position); p != plan_->paired.end() && pass_ > 0) {
    auto c = previous_.find(p->second);
    id = c == previous_.end() ? 0 : c->second;
    paired = true;
  }
  if (id == 0 || !live_.count(id)) {
    ++stats_.skipped_frees;
    return false;
  }
  stats_.paired_frees += paired ? 1 : 0;
  f.id = id;
  live_.erase(id);
  return true;
}

void StepRepeater::transform_args(KernelRecord& k) {
  size_t kept = 0;
  for (uint64_t original : k.args) {
    const uint64_t id = resolve(original);
    if (id) k.args[kept++] = id;
    stats_.dropped_args += id ? 0 : 1;
  }
  k.args.resize(kept);
}

// The live id an original id names in this pass, 0 for none: the step's own allocation, the
// carried instance a pre-step id pairs with, or a persistent allocation.
uint64_t StepRepeater::resolve(uint64_t original) const {
  if (auto it = local_.find(original); it != local_.end())
    return it->second && live_.count(it->second) ? it->second : 0;
  if (pass_ > 0) {
    if (auto p = plan_->paired_by_id.find(original); p != plan_->paired_by_id.end()) {
      auto c = previous_.find(p->second);
      return c != previous_.end() && live_.count(c->second) ? c->second : 0;
    }
  }
  return live_.count(original) ? original : 0;
}

Time StepRepeater::program_step_ns(int64_t step) const {
  const auto& program = reader_->program_step_ns();
  if (program.empty() || step < 0) return 0;
  return program[std::min(static_cast<size_t>(step), program.size() - 1)];
}

} // namespace faultline::trace
