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
  std::stable_sort(calls.begin(), calls.end(),
                   [](auto* a, auto* b) { return a->start < b->start; });
  // The range: the first cudaProfilerStart to the next cudaProfilerStop (the runtime's call and
  // the driver's inside it both come; the outer one's times are the program's).
  bool started = false;
  for (const raw::RawApiAct* c : calls) {
    if (!started && is(*c, ApiWhat::kRangeStart)) {
      p.range_start = c->start;
      started = p.has_range = true;
    } else if (started && is(*c, ApiWhat::kRangeStop)) {
      p.range_end = c->start;
      break;
    }
  }
  if (!started && !calls.empty()) p.range_start = calls.front()->start;
  const auto in_range = [&](uint64_t t) {
    return t >= p.range_start && (p.range_end == 0 || t <= p.range_end);
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
  // A sync reaches the driver inside the runtime's call: only the outermost call of a thread
  // counts.
  uint64_t open_until = 0;
  uint32_t open_thread = 0;
  for (const raw::RawApiAct* c : calls) {
    if (!is(*c, ApiWhat::kSync) || !in_range(c->start)) continue;
    if (c->thread == open_thread && c->end <= open_until) continue;
    p.syncs.emplace_back(c->start, c->end);
    open_until = c->end;
    open_thread = c->thread;
  }
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
    const ApiEvent& e = timing.api[tpass.ops[i].api_index];
    if (e.type == RawType::kCopy && e.copy.pad == raw::kCopyBlocking)
      anchors.emplace_back(std::max(tpass.ops[i].gpu_end, e.cpu_time), ppass.ops[i].cpu_return);
  }
  const auto tsyncs = timing_syncs(timing, tpass);
  const bool syncs_align = tsyncs.size() == ppass.syncs.size();
  if (syncs_align)
    for (size_t i = 0; i < tsyncs.size(); ++i) {
      anchors.emplace_back(tsyncs[i].first, ppass.syncs[i].first);
      if (tsyncs[i].second) anchors.emplace_back(tsyncs[i].second, ppass.syncs[i].second);
    }
  // Without a range the timing pass starts at its first event and the program pass at its first
  // recorded call, which differ: the first operation anchors both instead.
  if (tpass.has_range && ppass.has_range)
    anchors.emplace_back(tpass.range_start, ppass.range_start);
  if (tpass.has_range && ppass.range_end)
    for (const ApiEvent& e : timing.api)
      if (e.type == RawType::kRange && !e.range.on && e.cpu_time > tpass.range_start) {
        anchors.emplace_back(e.cpu_time, ppass.range_end);
        break;
      }
  std::sort(anchors.begin(), anchors.end());
  for (const auto& [from, to] : anchors) {
    if (!from_.empty() && from == from_.back()) continue;
    from_.push_back(from);
    to_.push_back(std::max(to, to_.empty() ? to : to_.back())); // never backwards
  }
  summary_ = {{"operations", ppass.ops.size()},
              {"syncs", ppass.syncs.size()},
              {"timing_pass_syncs", tsyncs.size()},
              {"syncs_anchored", syncs_align},
              {"unattributed_gpu_operations", ppass.unattributed}};
}

uint64_t CpuClock::operator()(uint64_t t) const {
  if (from_.empty()) return t;
  auto hi = std::upper_bound(from_.begin(), from_.end(), t);
  if (hi == from_.begin()) return to_.front() - std::min(to_.front(), from_.front() - t);
  const size_t i = static_cast<size_t>(hi - from_.begin()) - 1;
  if (hi == from_.end()) return to_[i] + (t - from_[i]);
  const auto span = static_cast<__int128>(to_[i + 1] - to_[i]);
  return to_[i] + static_cast<uint64_t>(span * (t - from_[i]) / (from_[i + 1] - from_[i]));
}

} // namespace faultline::capture
