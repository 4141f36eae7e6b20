#include "sim/program/trace_calls.h"

#include "sim/trace/reader.h"

#include <unordered_map>

namespace faultline::program {

std::vector<TraceCall> trace_calls(const std::string& trace_path, uint64_t shift) {
  trace::TraceReader reader(trace_path);
  trace::Record r;
  std::unordered_map<uint64_t, trace::AllocRecord> live;
  std::vector<TraceCall> out;
  size_t next_step = 1; // step 0 begins at the start
  while (reader.next(r)) {
    for (; next_step < reader.steps().size() &&
           reader.records() > reader.steps()[next_step].first_record;
         ++next_step)
      out.push_back({TraceCall::kStep, 0, 0, true, {}, {}});
    if (r.type == trace::RecordType::kAlloc) {
      live[r.alloc.id] = r.alloc;
      if (r.alloc.kind != trace::MemoryKind::kAllocatorBlock)
        out.push_back({TraceCall::kAlloc,
                       r.alloc.address + shift,
                       r.alloc.size,
                       r.alloc.kind == trace::MemoryKind::kManaged,
                       {},
                       {}});
    } else if (r.type == trace::RecordType::kFree) {
      const trace::AllocRecord a = live.at(r.free.id);
      live.erase(r.free.id);
      if (a.kind != trace::MemoryKind::kAllocatorBlock)
        out.push_back({TraceCall::kFree, a.address + shift, 0, true, {}, {}});
    } else if (r.type == trace::RecordType::kKernel) {
      TraceCall c{TraceCall::kLaunch, 0, 0, true, r.kernel.name, {}};
      for (uint64_t id : r.kernel.args)
        if (auto it = live.find(id); it != live.end())
          c.words.push_back(it->second.address + shift);
      out.push_back(std::move(c));
    }
  }
  return out;
}

void feed(const std::vector<TraceCall>& calls, ProgramRun& run, uint64_t behind) {
  for (const TraceCall& c : calls) {
    switch (c.kind) {
    case TraceCall::kAlloc:
      run.alloc(c.address, c.bytes, c.managed);
      break;
    case TraceCall::kFree:
      run.free(c.address);
      break;
    case TraceCall::kStep:
      run.step();
      break;
    case TraceCall::kLaunch:
      run.launch(c.name, c.words, 0);
      if (run.kernels() > behind) run.kernels_done(run.kernels() - behind);
      break;
    }
  }
  run.kernels_done(run.kernels());
}

} // namespace faultline::program
