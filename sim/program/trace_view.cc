#include "sim/program/trace_view.h"

#include "sim/trace/reader.h"

#include <algorithm>
#include <unordered_set>

namespace faultline::program {

TraceView::TraceView(const std::string& trace_path) {
  trace::TraceReader reader(trace_path);
  trace::Record r;
  std::vector<uint64_t> pages;
  std::unordered_set<uint64_t> blocks; // live allocator blocks' ids
  std::vector<BlockEvent> pending;
  std::vector<HostTouch> touches;
  while (reader.next(r)) {
    if (r.type == trace::RecordType::kAlloc && r.alloc.kind == trace::MemoryKind::kAllocatorBlock) {
      blocks.insert(r.alloc.id);
      pending.push_back({false, r.alloc});
    } else if (r.type == trace::RecordType::kFree && blocks.erase(r.free.id)) {
      trace::AllocRecord freed;
      freed.id = r.free.id;
      freed.time = r.free.time;
      pending.push_back({true, freed});
    } else if (r.type == trace::RecordType::kHostAccess) {
      touches.push_back({r.host.address, r.host.size});
    } else if (r.type == trace::RecordType::kKernel) {
      pages.clear();
      for (const trace::Access& a : r.kernel.accesses) pages.push_back(a.big_page);
      std::sort(pages.begin(), pages.end());
      pages.erase(std::unique(pages.begin(), pages.end()), pages.end());
      operations_.push_back({r.kernel.name, host::group_by_chunk(pages), r.kernel.args,
                             std::move(pending), std::move(touches)});
      pending.clear();
      touches.clear();
    }
  }
}

} // namespace faultline::program
