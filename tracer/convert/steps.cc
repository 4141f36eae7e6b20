#include "tracer/convert/steps.h"

#include "sim/core/error.h"
#include "sim/trace/reader.h"
#include "sim/trace/writer.h"

#include <filesystem>

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
  const std::string temporary = path + ".steps";
  {
    trace::TraceReader in(path);
    nlohmann::json header = in.metadata();
    nlohmann::json list = nlohmann::json::array();
    for (const StepMark& s : steps)
      list.push_back({{"first_record", s.first_record}, {"start_ns", s.start_ns}});
    header["steps"] = list;
    trace::TraceWriter out(temporary, header);
    trace::Record r;
    while (in.next(r)) out.write(r);
    out.close();
  }
  std::filesystem::rename(temporary, path);
}

} // namespace faultline::capture
