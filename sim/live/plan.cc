#include "sim/live/plan.h"

#include "sim/run/results.h"
#include "sim/trace/step_repeater.h"

#include <algorithm>

namespace faultline::live {
namespace {

class Planner {
public:
  Plan read(const std::string& path, uint64_t iterations) {
    trace::StepRepeater reader(path, iterations);
    trace::Record r;
    // Every step waits, as in the simulator, for the host time recorded since the previous
    // kernel's end (before the first kernel: since the trace's first record, where the
    // simulator's clock starts too).
    Time previous_end = -1;
    plan_.timeline = reader.timeline();
    plan_.version = reader.version();
    const bool issue = plan_.timeline == trace::Timeline::kIssue;
    while (reader.next(r)) {
      if (previous_end < 0) previous_end = r.time();
      const size_t steps = plan_.steps.size();
      if (plan_.training_steps.empty() || plan_.training_steps.back().step != reader.step())
        plan_.training_steps.push_back({steps, reader.step()});
      if (r.type == trace::RecordType::kAlloc) alloc(r.alloc);
      if (r.type == trace::RecordType::kFree) free(r.free.id);
      if (r.type == trace::RecordType::kHostAccess)
        plan_.steps.push_back({trace::RecordType::kHostAccess, {}, 0, 0, r.host});
      if (r.type == trace::RecordType::kKernel) kernel(r.kernel);
      if (r.type == trace::RecordType::kSync && issue)
        plan_.steps.push_back({trace::RecordType::kSync, {}, 0, 0, {}});
      if (plan_.steps.size() > steps)
        plan_.steps.back().gap = std::max<Time>(0, r.time() - previous_end);
      if (issue) // the CPU's previous record ends at its issue, or a sync's at its recorded wait
        previous_end = r.type == trace::RecordType::kSync ? r.sync.time + r.sync.wait : r.time();
      else if (r.type == trace::RecordType::kKernel)
        previous_end = r.kernel.start + r.kernel.duration;
    }
    plan_.iterations = iterations_json(reader);
    return std::move(plan_);
  }

private:
  void alloc(const trace::AllocRecord& a) {
    plan_.steps.push_back({trace::RecordType::kAlloc, a, 0, 0, {}});
    if (a.kind != trace::MemoryKind::kManaged) return;
    const auto slot = static_cast<uint32_t>(plan_.slots.size());
    plan_.slots[a.id] = slot;
    live_[a.address] = {a.id, a.size};
    address_[a.id] = a.address;
  }

  void free(uint64_t id) {
    plan_.steps.push_back({trace::RecordType::kFree, {}, id, 0, {}});
    auto it = address_.find(id);
    if (it == address_.end()) return;
    live_.erase(it->second);
    address_.erase(it);
  }

  void kernel(const trace::KernelRecord& k) {
    Kernel out{k.name, plan_.touches.size(), 0, plan_.chunks.size(), 0, k.duration, k.args};
    // A touch per live page each access covers, in the recorded order (repeats kept, as the
    // simulator keeps them, so that both cut a kernel too large for the budget alike).
    for (const trace::Access& a : k.accesses) {
      bool held = false;
      for_each_overlap(a.big_page * kBigPageSize, [&](uint32_t slot, uint32_t page) {
        held = true;
        plan_.touches.push_back({slot << 2 | static_cast<uint32_t>(a.type) % 3, page});
      });
      if (!held) ++plan_.skipped_accesses;
    }
    out.count = plan_.touches.size() - out.first;
    group_by_chunk(out.first);
    out.chunk_count = plan_.chunks.size() - out.first_chunk;
    plan_.steps.push_back({trace::RecordType::kKernel, {}, 0, plan_.kernels.size(), {}});
    plan_.kernels.push_back(std::move(out));
  }

  // Calls f(slot, page) for the 64 KB pages, counted from each allocation's start, that hold the
  // bytes of the trace's page at `address` (64 KB aligned): an allocation need not start or end
  // on a 64 KB boundary, so one trace page may fall in two allocations, and in two pages of one.
  template <typename F> void for_each_overlap(Addr address, F f) const {
    const Addr end = address + kBigPageSize;
    auto it = live_.upper_bound(address);
    if (it != live_.begin()) --it;
    for (; it != live_.end() && it->first < end; ++it) {
      const Addr base = it->first, from = std::max(address, base);
      const Addr to = std::min(end, base + it->second.second);
      if (from >= to) continue;
      const uint32_t slot = plan_.slots.at(it->second.first);
      for (Addr p = (from - base) / kBigPageSize; p * kBigPageSize < to - base; ++p)
        f(slot, static_cast<uint32_t>(p));
    }
  }

  // The touches from `first` on, as chunks in order of first appearance.
  void group_by_chunk(uint64_t first) {
    std::unordered_map<uint64_t, size_t> at; // slot << 32 | chunk -> index into plan_.chunks
    for (uint64_t i = first; i < plan_.touches.size(); ++i) {
      const Touch& t = plan_.touches[i];
      const uint32_t slot = t.slot_type >> 2, chunk = t.page / kBigPagesPerBlock;
      auto [it, fresh] = at.try_emplace(uint64_t{slot} << 32 | chunk, plan_.chunks.size());
      if (fresh) plan_.chunks.push_back({slot, chunk, 0});
      plan_.chunks[it->second].pages |= 1u << (t.page % kBigPagesPerBlock);
    }
  }

  Plan plan_;
  std::map<Addr, std::pair<uint64_t, Bytes>> live_; // managed: address -> (id, size)
  std::unordered_map<uint64_t, Addr> address_;      // managed: id -> address
};

} // namespace

Plan read_plan(const std::string& path, uint64_t iterations) {
  return Planner().read(path, iterations);
}

} // namespace faultline::live
