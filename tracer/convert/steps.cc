#include "tracer/convert/steps.h"

#include "sim/core/error.h"
#include "sim/trace/steps.h"

namespace faultline::capture {

std::vector<bool> step_starts(const RawStream& raw, const Pass& pass) {
  std::vector<bool> starts(raw.api.size(), false);
  bool in_range = !pass.has_range;
  size_t boundary = SIZE_MAX; // the open boundary, until a kernel confirms it
  auto close = [&] { boundary = SIZE_MAX; };
  for (size_t i = 0; i < raw.api.size(); ++i) {
    const ApiEvent& e = raw.api[i];
    if (e.type == raw::RawType::kRange) {
      if (pass.has_range) in_range = e.range.on != 0;
      if (!in_range) close();
      if (in_range && e.range.on) boundary = i;
      continue;
    }
    if (!in_range) continue;
    if (e.type == raw::RawType::kStep) boundary = i;
    if (e.type == raw::RawType::kLaunch && boundary != SIZE_MAX) {
      starts[boundary] = true;
      close();
    }
  }
  return starts;
}

std::vector<int64_t> program_step_ns(const RawStream& raw, const Pass& pass,
                                     const CpuClock& clock) {
  const std::vector<bool> starts = step_starts(raw, pass);
  std::vector<uint64_t> bounds;
  size_t last_start = 0;
  for (size_t i = 0; i < raw.api.size(); ++i)
    if (starts[i]) {
      bounds.push_back(clock(raw.api[i].cpu_time));
      last_start = i;
    }
  if (bounds.empty()) return {};
  uint64_t end = raw.api.back().cpu_time;
  for (size_t i = last_start + 1; i < raw.api.size(); ++i)
    if (pass.has_range && raw.api[i].type == raw::RawType::kRange && !raw.api[i].range.on) {
      end = raw.api[i].cpu_time;
      break;
    }
  end = clock(end);
  bounds.push_back(std::max(end, bounds.back() + 1));
  std::vector<int64_t> out;
  for (size_t i = 0; i + 1 < bounds.size(); ++i)
    out.push_back(static_cast<int64_t>(std::max<uint64_t>(bounds[i + 1] - bounds[i], 1)));
  return out;
}

void write_steps(const std::string& path, const std::vector<StepMark>& steps,
                 const std::vector<int64_t>& program_ns) {
  std::vector<trace::Step> out;
  for (const StepMark& s : steps) out.push_back({s.first_record, s.start_ns});
  trace::rewrite_steps(path, out,
                       program_ns.size() == out.size() ? program_ns : std::vector<int64_t>{});
}

} // namespace faultline::capture
