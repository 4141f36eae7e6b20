#include "sim/program/kernel_rows.h"

#include "tracer/raw/raw_format.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

namespace faultline::program {

using nlohmann::json;

json kernel_rows(const capture::RawStream& raw, bool counters) {
  std::unordered_map<uint32_t, const raw::RawKernelAct*> kernels;
  std::unordered_map<uint32_t, const raw::RawCopyAct*> copies;
  for (const auto& k : raw.kernels) kernels[k.corr] = &k;
  for (const auto& c : raw.copies) copies[c.corr] = &c;
  // The unified-memory records by start, so each operation finds its window by binary search.
  std::vector<const raw::RawUm*> um;
  for (const auto& u : raw.um) um.push_back(&u);
  std::sort(um.begin(), um.end(),
            [](const raw::RawUm* a, const raw::RawUm* b) { return a->start < b->start; });

  struct Span {
    std::string name;
    uint64_t start = 0, end = 0;
    bool known = false;
  };
  std::vector<Span> spans;
  uint64_t first = std::numeric_limits<uint64_t>::max();
  for (const capture::ApiEvent& e : raw.api) {
    Span s;
    const auto timed = [&s](const auto& record) {
      s.start = record.start;
      s.end = record.end;
      s.known = true;
    };
    if (e.type == raw::RawType::kLaunch) {
      s.name = e.name;
      auto it = kernels.find(e.launch.corr_driver);
      if (it == kernels.end()) it = kernels.find(e.launch.corr_runtime);
      if (it != kernels.end()) timed(*it->second);
    } else if (e.type == raw::RawType::kCopy && e.copy.bytes > 0) {
      s.name =
          raw::copy_name(e.copy.op == static_cast<uint32_t>(raw::CopyOp::kMemset), e.copy.kind);
      auto it = copies.find(e.copy.corr);
      if (it != copies.end()) timed(*it->second);
    } else {
      continue;
    }
    if (s.known) first = std::min(first, s.start);
    spans.push_back(std::move(s));
  }

  json rows = json::array();
  for (size_t i = 0; i < spans.size(); ++i) {
    const Span& s = spans[i];
    json row = {{"index", i}, {"name", s.name}};
    if (!s.known) {
      row["gpu_ns"] = nullptr;
      rows.push_back(std::move(row));
      continue;
    }
    row["start_ns"] = s.start - first;
    row["end_ns"] = s.end - first;
    row["gpu_ns"] = s.end - s.start;
    if (!counters) {
      rows.push_back(std::move(row));
      continue;
    }
    uint64_t faults = 0, records = 0, to_gpu = 0, to_host = 0;
    auto it = std::lower_bound(um.begin(), um.end(), s.start,
                               [](const raw::RawUm* u, uint64_t t) { return u->start < t; });
    for (; it != um.end() && (*it)->start <= s.end; ++it) {
      const raw::RawUm& u = **it;
      switch (static_cast<raw::UmCounter>(u.counter)) {
      case raw::UmCounter::kGpuFault:
        faults += u.value;
        ++records;
        break;
      case raw::UmCounter::kHtoD:
        to_gpu += u.value;
        break;
      case raw::UmCounter::kDtoH:
        to_host += u.value;
        break;
      default:
        break;
      }
    }
    row["gpu_faults"] = faults;
    row["fault_records"] = records;
    row["bytes_host_to_gpu"] = to_gpu;
    row["bytes_gpu_to_host"] = to_host;
    rows.push_back(std::move(row));
  }
  return rows;
}

} // namespace faultline::program
