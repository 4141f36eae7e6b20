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

void write_steps(const std::string& path, const std::vector<StepMark>& steps) {
  std::vector<trace::Step> out;
  for (const StepMark& s : steps) out.push_back({s.first_record, s.start_ns});
  trace::rewrite_steps(path, out);
}

} // namespace faultline::capture
