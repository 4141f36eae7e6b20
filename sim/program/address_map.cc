#include "sim/program/address_map.h"

#include "sim/core/error.h"
#include "sim/trace/reader.h"

namespace faultline::program {

AddressMap::AddressMap(const std::string& trace_path) {
  trace::TraceReader reader(trace_path);
  trace::Record r;
  while (reader.next(r))
    if (r.type == trace::RecordType::kAlloc && r.alloc.kind != trace::MemoryKind::kAllocatorBlock)
      trace_.push_back(
          {r.alloc.address, r.alloc.size, r.alloc.kind == trace::MemoryKind::kManaged, r.alloc.id});
}

AddressMap::AddressMap(const Segments& segments) {
  for (const auto& [range, managed] : segments)
    trace_.push_back({range.first, range.second, managed});
}

Addr AddressMap::allocated(Addr live, Bytes size, bool managed) {
  if (next_ >= trace_.size()) {
    ++beyond_;
    return kNoAddress;
  }
  const Segment& s = trace_[next_];
  const auto kind = [](bool m) { return m ? "managed" : "device"; };
  if (s.size != size || s.managed != managed)
    throw Error("the run's allocation #" + std::to_string(next_) + " is " + std::to_string(size) +
                " " + kind(managed) + " bytes, the trace's " + std::to_string(s.size) + " " +
                kind(s.managed) + " bytes: the trace is not of this program as it runs");
  ++next_;
  by_live_[live] = {size, s.address};
  by_trace_[s.address] = {size, live};
  return s.address;
}

void AddressMap::freed(Addr live) {
  auto it = by_live_.find(live);
  if (it == by_live_.end()) return;
  // The trace may have reused the address for an allocation the run still holds.
  if (auto t = by_trace_.find(it->second.second); t != by_trace_.end() && t->second.second == live)
    by_trace_.erase(t);
  by_live_.erase(it);
}

Addr AddressMap::to_trace(Addr live) const {
  auto it = by_live_.upper_bound(live);
  if (it == by_live_.begin()) return kNoAddress;
  --it;
  return live < it->first + it->second.first ? it->second.second + (live - it->first) : kNoAddress;
}

} // namespace faultline::program
