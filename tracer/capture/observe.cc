#include "tracer/capture/observe.h"

#include <map>

namespace faultline::capture {
namespace {

const char* cause_name(uint32_t cause) {
  static const char* names[] = {"unknown",  "user",     "coherence",
                                "prefetch", "eviction", "access_counters"};
  return cause < 6 ? names[cause] : "unknown";
}

nlohmann::json migrations(const RawStream& raw, raw::UmCounter counter) {
  std::map<std::string, std::pair<uint64_t, uint64_t>> by_cause; // records, bytes
  for (const raw::RawUm& u : raw.um)
    if (u.counter == static_cast<uint32_t>(counter)) {
      auto& slot = by_cause[cause_name(u.flags)];
      ++slot.first;
      slot.second += u.value;
    }
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [cause, v] : by_cause) j[cause] = {{"records", v.first}, {"bytes", v.second}};
  return j;
}

uint64_t count(const RawStream& raw, raw::UmCounter counter, bool sum_values) {
  uint64_t n = 0;
  for (const raw::RawUm& u : raw.um)
    if (u.counter == static_cast<uint32_t>(counter)) n += sum_values ? u.value : 1;
  return n;
}

} // namespace

nlohmann::json observe_summary(const RawStream& raw) {
  uint64_t launches = 0, copies = 0, allocations = 0;
  for (const ApiEvent& e : raw.api) {
    launches += e.type == raw::RawType::kLaunch;
    copies += e.type == raw::RawType::kCopy;
    allocations += e.type == raw::RawType::kAlloc;
  }
  using raw::UmCounter;
  return {{"gpu", raw.meta.value("gpu", "unknown")},
          {"launches", launches},
          {"copies_and_memsets", copies},
          {"allocations", allocations},
          {"htod", migrations(raw, UmCounter::kHtoD)},
          {"dtoh", migrations(raw, UmCounter::kDtoH)},
          {"gpu_faults",
           {{"records", count(raw, UmCounter::kGpuFault, false)},
            {"fault_groups", count(raw, UmCounter::kGpuFault, true)}}},
          {"cpu_faults", count(raw, UmCounter::kCpuFault, false)},
          {"thrashing", count(raw, UmCounter::kThrashing, false)},
          {"throttling", count(raw, UmCounter::kThrottling, false)},
          {"remote_map", count(raw, UmCounter::kRemoteMap, false)},
          {"dropped_records", raw.dropped}};
}

} // namespace faultline::capture
