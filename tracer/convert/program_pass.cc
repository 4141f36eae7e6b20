#include "tracer/convert/program_pass.h"

#include "sim/core/error.h"

#include <algorithm>
#include <string>
#include <unordered_map>

namespace faultline::capture {
namespace {

using raw::ApiWhat;
using raw::RawType;

bool is(const raw::RawApiAct& call, ApiWhat what) {
  return call.what == static_cast<uint32_t>(what);
}

const char* kind_name(OpKind kind) {
  return kind == OpKind::kKernel ? "kernel" : kind == OpKind::kMemcpy ? "memcpy" : "memset";
}

std::string shape(const uint32_t grid[3], const uint32_t block[3]) {
  return "grid " + std::to_string(grid[0]) + "x" + std::to_string(grid[1]) + "x" +
         std::to_string(grid[2]) + ", block " + std::to_string(block[0]) + "x" +
         std::to_string(block[1]) + "x" + std::to_string(block[2]);
}

// The timing pass's CPU-blocking syncs inside its range, as (entry, return); the return is 0
// where CUPTI recorded no end.
std::vector<std::pair<uint64_t, uint64_t>> timing_syncs(const RawStream& raw, const Pass& pass) {
  std::unordered_map<uint32_t, uint64_t> ends;
  for (const raw::RawSyncAct& s : raw.syncs) ends[s.corr] = std::max(ends[s.corr], s.end);
  std::vector<std::pair<uint64_t, uint64_t>> out;
  bool in_range = !pass.has_range;
  for (const ApiEvent& e : raw.api) {
    if (e.type == RawType::kRange && pass.has_range) in_range = e.range.on != 0;
    if (!in_range || e.type != RawType::kSync) continue;
    auto it = ends.find(e.sync.corr);
    out.emplace_back(e.cpu_time, it == ends.end() ? 0 : std::max(it->second, e.cpu_time));
  }
  return out;
}

} // namespace

ProgramPass build_program_pass(const RawStream& raw) {
  const std::string mode = raw.meta.value("mode", "");
  if (mode != "program")
    throw TraceError(raw.path + ": the raw stream of " +
                     (mode.empty() ? std::string("no named pass") : "a " + mode + " pass") +
                     ", not of a program pass (FAULTLINE_MODE=program)");
  ProgramPass p;
  std::vector<const raw::RawApiAct*> calls;
  for (const raw::RawApiAct& c : raw.calls) calls.push_back(&c);
  // An outer call before the calls nested in it (a runtime call and the driver's inside it may
  // start at the same nanosecond).
  std::stable_sort(calls.begin(), calls.end(), [](auto* a, auto* b) {
    return a->start != b->start ? a->start < b->start : a->end > b->end;
  });
  // Only the outermost call of each thread counts: the runtime's sync or profiler call reaches
  // the driver inside it, and both are recorded.
  std::vector<const raw::RawApiAct*> outer;
  std::unordered_map<uint32_t, uint64_t> open_until; // per thread
  for (const raw::RawApiAct* c : calls) {
    uint64_t& until = open_until[c->thread];
    if (c->start < until && c->end <= until) continue;
    outer.push_back(c);
    until = c->end;
  }
  // The range as the timing pass takes it (build_pass): with --range profiler, every
  // cudaProfilerStart to the next cudaProfilerStop; else everything.
  p.has_range = raw.meta.value("range", "all") == "profiler";
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  if (!p.has_range) {
    ranges.emplace_back(0, UINT64_MAX);
    if (!calls.empty()) p.range_start = calls.front()->start;
  } else {
    bool in = false;
    for (const raw::RawApiAct* c : outer) {
      if (is(*c, ApiWhat::kRangeStart) && !in) {
        ranges.emplace_back(c->start, UINT64_MAX);
        in = true;
      } else if (is(*c, ApiWhat::kRangeStop) && in) {
        ranges.back().second = c->start;
        p.range_end = c->start;
        in = false;
      }
    }
    if (!ranges.empty()) p.range_start = ranges.front().first;
  }
  const auto in_range = [&](uint64_t t) {
    for (const auto& [begin, end] : ranges)
      if (t >= begin && t <= end) return true;
    return false;
  };
  std::unordered_map<uint32_t, const raw::RawApiAct*> by_corr;
  for (const raw::RawApiAct* c : calls) {
    if (is(*c, ApiWhat::kGraphLaunch) && in_range(c->start))
      throw TraceError(raw.path + ": the program pass launched a CUDA graph inside its range; " +
                       "the tracer cannot expand graphs");
    if (is(*c, ApiWhat::kLaunch) || is(*c, ApiWhat::kMemcpy) || is(*c, ApiWhat::kMemset))
      by_corr[c->corr] = c;
  }
  const auto add = [&](uint32_t corr, OpKind kind, uint64_t start, uint64_t end,
                       const uint32_t* grid, const uint32_t* block) {
    auto it = by_corr.find(corr);
    if (it == by_corr.end()) {
      p.unattributed += in_range(start);
      return;
    }
    if (!in_range(it->second->start)) return;
    ProgramOp op;
    op.kind = kind;
    op.cpu_time = it->second->start;
    op.cpu_return = it->second->end;
    op.gpu_start = start;
    op.gpu_end = end;
    for (int i = 0; grid && i < 3; ++i) {
      op.grid[i] = grid[i];
      op.block[i] = block[i];
    }
    p.ops.push_back(op);
  };
  for (const raw::RawKernelShape& k : raw.shaped)
    add(k.corr, OpKind::kKernel, k.start, k.end, k.grid, k.block);
  for (const raw::RawCopyAct& c : raw.copies)
    add(c.corr, c.is_memset ? OpKind::kMemset : OpKind::kMemcpy, c.start, c.end, nullptr, nullptr);
  std::stable_sort(p.ops.begin(), p.ops.end(),
                   [](const ProgramOp& a, const ProgramOp& b) { return a.cpu_time < b.cpu_time; });
  for (const raw::RawApiAct* c : outer)
    if (is(*c, ApiWhat::kSync) && in_range(c->start)) p.syncs.emplace_back(c->start, c->end);
  return p;
}

CpuClock::CpuClock(const RawStream& timing, const Pass& tpass, const RawStream& program,
                   const ProgramPass& ppass) {
  const auto differ = [&](const std::string& what) {
    throw TraceError("the program pass (" + program.path + ") and the timing pass (" + timing.path +
                     ") ran different programs: " + what +
                     "; capture again, or with --no-program-pass to keep the timing pass's clock");
  };
  if (ppass.ops.size() != tpass.ops.size())
    differ("the program pass ran " + std::to_string(ppass.ops.size()) +
           " operations inside its range, the timing pass " + std::to_string(tpass.ops.size()));
  for (size_t i = 0; i < ppass.ops.size(); ++i) {
    const ProgramOp& p = ppass.ops[i];
    const Operation& t = tpass.ops[i];
    const bool same_shape =
        std::equal(p.grid, p.grid + 3, t.grid) && std::equal(p.block, p.block + 3, t.block);
    if (p.kind != t.kind || (p.kind == OpKind::kKernel && !same_shape))
      differ("operation #" + std::to_string(i) + " is the timing pass's " + kind_name(t.kind) +
             " " + t.name + " (" + shape(t.grid, t.block) + ") but the program pass's " +
             kind_name(p.kind) + " (" + shape(p.grid, p.block) + ")");
  }
  std::vector<std::pair<uint64_t, uint64_t>> anchors;
  for (size_t i = 0; i < ppass.ops.size(); ++i) {
    anchors.emplace_back(tpass.ops[i].cpu_time, ppass.ops[i].cpu_time);
    // A blocking cudaMemcpy returns once its copy is done: its return is the CPU's next moment.
    // Some (device to device, pageable host to device) return before the copy ends; the copy's
    // end is then no moment of the CPU's.
    const ApiEvent& e = timing.api[tpass.ops[i].api_index];
    const uint64_t end = std::max(tpass.ops[i].gpu_end, e.cpu_time);
    if (e.type == RawType::kCopy && e.copy.pad == raw::kCopyBlocking &&
        (i + 1 == tpass.ops.size() || end < tpass.ops[i + 1].cpu_time))
      anchors.emplace_back(end, ppass.ops[i].cpu_return);
  }
  // Syncs pair up by their order only where each sits after as many operations in both passes.
  const auto tsyncs = timing_syncs(timing, tpass);
  std::vector<uint64_t> tcalls, pcalls;
  for (const Operation& op : tpass.ops) tcalls.push_back(op.cpu_time);
  for (const ProgramOp& op : ppass.ops) pcalls.push_back(op.cpu_time);
  std::sort(tcalls.begin(), tcalls.end());
  const auto before = [](const std::vector<uint64_t>& calls, uint64_t t) {
    return std::lower_bound(calls.begin(), calls.end(), t) - calls.begin();
  };
  bool syncs_align = tsyncs.size() == ppass.syncs.size();
  for (size_t i = 0; syncs_align && i < tsyncs.size(); ++i)
    syncs_align = before(tcalls, tsyncs[i].first) == before(pcalls, ppass.syncs[i].first);
  if (syncs_align)
    for (size_t i = 0; i < tsyncs.size(); ++i) {
      anchors.emplace_back(tsyncs[i].first, ppass.syncs[i].first);
      if (tsyncs[i].second) anchors.emplace_back(tsyncs[i].second, ppass.syncs[i].second);
    }
  // Without a range the timing pass starts at its first event (an allocation, say) and the program
  // pass at its first recorded call, which are different moments: the range's start is then no
  // anchor, and the earliest anchor places it.
  if (tpass.has_range && ppass.has_range) {
    anchors.emplace_back(tpass.range_start, ppass.range_start);
    uint64_t last_stop = 0; // where the trace's records end (the converter's range end)
    for (const ApiEvent& e : timing.api)
      if (e.type == RawType::kRange && !e.range.on && e.cpu_time > tpass.range_start)
        last_stop = e.cpu_time;
    if (last_stop && ppass.range_end) anchors.emplace_back(last_stop, ppass.range_end);
  }
  std::sort(anchors.begin(), anchors.end());
  uint64_t clamped = 0; // anchors out of order: the passes did not line up there
  for (const auto& [from, to] : anchors) {
    if (!from_.empty() && from == from_.back()) continue;
    clamped += !to_.empty() && to < to_.back();
    from_.push_back(from);
    to_.push_back(std::max(to, to_.empty() ? to : to_.back())); // never backwards
  }
  summary_ = {
      {"operations", ppass.ops.size()},     {"syncs", ppass.syncs.size()},
      {"timing_pass_syncs", tsyncs.size()}, {"syncs_anchored", syncs_align},
      {"anchors_out_of_order", clamped},    {"unattributed_gpu_operations", ppass.unattributed}};
}

uint64_t CpuClock::operator()(uint64_t t) const {
  if (from_.empty()) return t;
  auto hi = std::upper_bound(from_.begin(), from_.end(), t);
  if (hi == from_.begin()) return to_.front() - std::min(to_.front(), from_.front() - t);
  const size_t i = static_cast<size_t>(hi - from_.begin()) - 1;
  if (hi == from_.end()) { // a shift, saturating so that the map stays monotone
    const uint64_t past = t - from_[i];
    return to_[i] > UINT64_MAX - past ? UINT64_MAX : to_[i] + past;
  }
  const auto span = static_cast<__int128>(to_[i + 1] - to_[i]);
  return to_[i] + static_cast<uint64_t>(span * (t - from_[i]) / (from_[i + 1] - from_[i]));
}

} // namespace faultline::capture
