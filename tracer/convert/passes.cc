#include "tracer/convert/passes.h"

#include "sim/core/error.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <cxxabi.h>
#include <functional>
#include <memory>
#include <unordered_map>
#include <unordered_set>

namespace faultline::capture {
namespace {

using raw::RawType;

struct Activities {
  std::unordered_map<uint32_t, const raw::RawKernelAct*> kernels;
  std::unordered_map<uint32_t, const raw::RawCopyAct*> copies;

  explicit Activities(const RawStream& raw) {
    for (const auto& k : raw.kernels) kernels[k.corr] = &k;
    for (const auto& c : raw.copies) copies[c.corr] = &c;
  }
};

[[noreturn]] void missing(const RawStream& raw, size_t index, const Operation& op) {
  throw TraceError(raw.path + ": operation #" + std::to_string(index) + " (" + op.name +
                   ") has no activity record; CUPTI lost it (dropped records: " +
                   std::to_string(raw.dropped) + ")");
}

// A sanitize-mode pass has no activity records: its operations carry no GPU times (the patched
// kernels' times would be meaningless anyway).
bool has_activity(const RawStream& raw) {
  return raw.meta.value("mode", "") != "sanitize";
}

Operation kernel_op(const RawStream& raw, const Activities& acts, const ApiEvent& e, size_t index) {
  Operation op;
  op.kind = OpKind::kKernel;
  op.name = demangle(e.name);
  op.cpu_time = e.cpu_time;
  for (int i = 0; i < 3; ++i) {
    op.grid[i] = e.launch.grid[i];
    op.block[i] = e.launch.block[i];
  }
  op.pointers = e.words;
  if (!has_activity(raw)) return op;
  auto it = acts.kernels.find(e.launch.corr_driver);
  if (it == acts.kernels.end()) it = acts.kernels.find(e.launch.corr_runtime);
  if (it == acts.kernels.end()) missing(raw, index, op);
  op.stream = it->second->stream;
  op.gpu_start = it->second->start;
  op.gpu_end = it->second->end;
  return op;
}

Operation copy_op(const RawStream& raw, const Activities& acts, const ApiEvent& e, size_t index) {
  Operation op;
  const bool memset = e.copy.op == static_cast<uint32_t>(raw::CopyOp::kMemset);
  op.kind = memset ? OpKind::kMemset : OpKind::kMemcpy;
  op.name = raw::copy_name(memset, e.copy.kind);
  op.cpu_time = e.cpu_time;
  op.pointers = {e.copy.dst};
  if (!memset) op.pointers.push_back(e.copy.src);
  if (!has_activity(raw)) return op;
  auto it = acts.copies.find(e.copy.corr);
  if (it == acts.copies.end()) missing(raw, index, op);
  op.stream = it->second->stream;
  op.gpu_start = it->second->start;
  op.gpu_end = it->second->end;
  return op;
}

// A copy or memset of zero bytes reaches no GPU engine and leaves no activity record.
bool is_operation(const ApiEvent& e) {
  return e.type == RawType::kLaunch || (e.type == RawType::kCopy && e.copy.bytes > 0);
}

} // namespace

// Demangled, and cut to 4096 bytes: some template kernels' names run past the trace's limit,
// and the cut keeps a hash of the whole so different kernels keep different names.
std::string demangle(const std::string& name) {
  constexpr size_t kLongest = 4096;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  std::string text = status == 0 && out ? std::string(out.get()) : name;
  if (text.size() <= kLongest) return text;
  char tag[32];
  std::snprintf(tag, sizeof(tag), "...#%016zx", std::hash<std::string>{}(text));
  return text.substr(0, kLongest - std::strlen(tag)) + tag;
}

namespace {

// GPU work inside the capture range that no recorded call launched (driver-level copies,
// cudaMemcpy2D, graph nodes...): the trace cannot contain it, so it is counted.
uint64_t unattributed(const RawStream& raw, const Pass& pass,
                      const std::vector<std::pair<uint64_t, uint64_t>>& ranges) {
  std::unordered_set<uint64_t> known;
  for (const Operation& op : pass.ops) known.insert(op.gpu_start);
  auto inside = [&](uint64_t t) {
    for (const auto& [begin, end] : ranges)
      if (t >= begin && t < end) return true;
    return false;
  };
  uint64_t n = 0;
  for (const auto& k : raw.kernels) n += inside(k.start) && !known.count(k.start);
  for (const auto& c : raw.copies) n += inside(c.start) && c.bytes > 0 && !known.count(c.start);
  return n;
}

} // namespace

Pass build_pass(const RawStream& raw) {
  Activities acts(raw);
  Pass pass;
  pass.has_range = raw.meta.value("range", "all") == "profiler";
  bool in_range = !pass.has_range;
  std::vector<std::pair<uint64_t, uint64_t>> ranges; // CPU-time intervals of the range
  if (in_range) ranges.emplace_back(0, UINT64_MAX);
  for (size_t i = 0; i < raw.api.size(); ++i) {
    const ApiEvent& e = raw.api[i];
    if (pass.range_start == 0 && (in_range || (e.type == RawType::kRange && e.range.on)))
      pass.range_start = e.cpu_time;
    if (e.type == RawType::kRange && pass.has_range) {
      if (e.range.on && !in_range) ranges.emplace_back(e.cpu_time, UINT64_MAX);
      if (!e.range.on && in_range) ranges.back().second = e.cpu_time;
      in_range = e.range.on != 0;
    }
    if (!in_range) continue;
    if (e.type == RawType::kGraphLaunch)
      throw TraceError(raw.path + ": a CUDA graph is launched inside the capture range; the " +
                       "tracer records kernels launched one by one and cannot expand graphs");
    if (e.type == RawType::kEvict && e.evict.purpose == 1 && !pass.ops.empty())
      pass.ops.back().evict_after = i;
    if (!is_operation(e)) continue;
    size_t index = pass.ops.size();
    pass.ops.push_back(e.type == RawType::kLaunch ? kernel_op(raw, acts, e, index)
                                                  : copy_op(raw, acts, e, index));
    pass.ops.back().api_index = i;
  }
  pass.unattributed = unattributed(raw, pass, ranges);
  return pass;
}

void AllocationWalk::apply(const ApiEvent& e) {
  if (e.type == RawType::kAlloc) {
    Live l{sizes_.size(), e.alloc.bytes, static_cast<raw::AllocKind>(e.alloc.kind)};
    live_[e.alloc.address] = l;
    sizes_.emplace_back(e.alloc.bytes, l.kind);
    addresses_.push_back(e.alloc.address);
  } else if (e.type == RawType::kFree) {
    live_.erase(e.free.address);
  }
}

const std::pair<const uint64_t, AllocationWalk::Live>*
AllocationWalk::find(uint64_t address) const {
  auto it = live_.upper_bound(address);
  if (it == live_.begin()) return nullptr;
  --it;
  return address < it->first + it->second.size ? &*it : nullptr;
}

namespace {

using Resolved = std::vector<std::pair<uint64_t, uint64_t>>; // (ordinal, offset)

std::vector<Resolved> resolve_arguments(const RawStream& raw, const Pass& pass,
                                        AllocationWalk& walk) {
  std::vector<Resolved> out;
  size_t next = 0;
  for (size_t i = 0; i < raw.api.size(); ++i) {
    walk.apply(raw.api[i]);
    if (next < pass.ops.size() && pass.ops[next].api_index == i) {
      Resolved r;
      for (uint64_t word : pass.ops[next].pointers)
        if (auto* hit = walk.find(word)) r.emplace_back(hit->second.ordinal, word - hit->first);
      out.push_back(std::move(r));
      ++next;
    }
  }
  return out;
}

// The allocations an operation's argument words fall in. Words are compared as allocations, not
// offsets: library workspaces are carved differently when timing differs.
std::vector<uint64_t> ordinals(const Resolved& r) {
  std::vector<uint64_t> out;
  for (const auto& [ordinal, offset] : r) out.push_back(ordinal);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string dims(const uint32_t* d) {
  std::string s = "(";
  for (int i = 0; i < 3; ++i) s.append(std::to_string(d[i])).append(i < 2 ? "," : ")");
  return s;
}

std::string describe(const Operation& op) {
  return op.name + " grid " + dims(op.grid) + " block " + dims(op.block);
}

} // namespace

uint64_t align_passes(const RawStream& timing_raw, const Pass& timing, const RawStream& access_raw,
                      const Pass& access) {
  uint64_t differing = 0;
  const std::string where = timing_raw.path + " and " + access_raw.path;
  AllocationWalk tw, aw;
  std::vector<Resolved> targs = resolve_arguments(timing_raw, timing, tw);
  std::vector<Resolved> aargs = resolve_arguments(access_raw, access, aw);
  const auto& ta = tw.history();
  const auto& aa = aw.history();
  for (size_t i = 0; i < std::min(ta.size(), aa.size()); ++i)
    if (ta[i] != aa[i])
      throw TraceError(where + ": the passes disagree at allocation #" + std::to_string(i) + ": " +
                       std::to_string(ta[i].first) + " bytes in the timing pass, " +
                       std::to_string(aa[i].first) + " in the access pass");
  if (ta.size() != aa.size())
    throw TraceError(where + ": the timing pass made " + std::to_string(ta.size()) +
                     " allocations, the access pass " + std::to_string(aa.size()));
  for (size_t i = 0; i < std::min(timing.ops.size(), access.ops.size()); ++i) {
    const Operation& t = timing.ops[i];
    const Operation& a = access.ops[i];
    if (describe(t) != describe(a))
      throw TraceError(where + ": the passes disagree at operation #" + std::to_string(i) +
                       ": the timing pass ran " + describe(t) + ", the access pass " + describe(a));
    differing += ordinals(targs[i]) != ordinals(aargs[i]);
  }
  if (timing.ops.size() != access.ops.size())
    throw TraceError(where + ": the timing pass ran " + std::to_string(timing.ops.size()) +
                     " operations in the capture range, the access pass " +
                     std::to_string(access.ops.size()));
  return differing;
}

} // namespace faultline::capture
