#include "tracer/convert/step_syncs.h"

#include "sim/core/error.h"
#include "sim/trace/reader.h"
#include "sim/trace/writer.h"

#include <algorithm>
#include <vector>

namespace faultline::capture {
namespace {

// The steps' first records and the step ends the syncs go at: a first pass over the trace.
struct StepEnds {
  std::vector<trace::SyncRecord> syncs; // one per step, in order
};

StepEnds find_step_ends(const std::string& path) {
  trace::TraceReader reader(path);
  if (reader.timeline() != trace::Timeline::kIssue)
    throw TraceError(path + ": header: \"timeline\": step syncs go into an issue-time trace only; "
                            "this one is serial");
  if (!reader.steps_declared())
    throw TraceError(path + ": header: \"steps\": expected the steps whose ends to synchronise, "
                            "missing");
  StepEnds out;
  trace::Record r;
  int64_t step = -1;
  Time last_record = 0, gpu_end = 0;
  auto close = [&] {
    if (step < 0) return;
    out.syncs.push_back(trace::SyncRecord{last_record, trace::SyncKind::kDevice, 0,
                                          std::max<Time>(0, gpu_end - last_record)});
  };
  while (reader.next(r)) {
    if (r.type == trace::RecordType::kSync && r.sync.kind == trace::SyncKind::kDevice)
      throw TraceError(reader.where() + ": the trace holds a device sync already: its step ends "
                                        "were recorded");
    if (reader.step() != step) {
      close();
      step = reader.step();
    }
    last_record = r.time();
    if (r.type == trace::RecordType::kKernel)
      gpu_end = std::max(gpu_end, r.kernel.start + r.kernel.queued + r.kernel.duration);
  }
  close();
  return out;
}

} // namespace

uint64_t add_step_syncs(const std::string& in, const std::string& out) {
  const StepEnds ends = find_step_ends(in);
  trace::TraceReader reader(in);
  nlohmann::json header = reader.metadata();
  header["step_syncs_added"] = ends.syncs.size();
  // Each sync becomes a record before the next step's first: the steps' first records move.
  std::vector<trace::Step> steps = reader.steps();
  for (size_t i = 0; i < steps.size(); ++i) steps[i].first_record += i;
  header["steps"] = trace::steps_json(steps);
  trace::TraceWriter writer(out, header);
  trace::Record r;
  int64_t step = -1;
  size_t next = 0;
  while (reader.next(r)) {
    if (reader.step() != step) {
      if (step >= 0) writer.write(ends.syncs.at(next++));
      step = reader.step();
    }
    writer.write(r);
  }
  if (step >= 0) writer.write(ends.syncs.at(next++));
  writer.close();
  return next;
}

} // namespace faultline::capture
