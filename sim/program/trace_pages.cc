#include "sim/program/trace_pages.h"

#include "sim/trace/reader.h"

#include <algorithm>

namespace faultline::program {

TracePages::TracePages(const std::string& trace_path) {
  trace::TraceReader reader(trace_path);
  trace::Record r;
  std::vector<uint64_t> pages;
  while (reader.next(r)) {
    if (r.type != trace::RecordType::kKernel) continue;
    pages.clear();
    for (const trace::Access& a : r.kernel.accesses) pages.push_back(a.big_page);
    std::sort(pages.begin(), pages.end());
    pages.erase(std::unique(pages.begin(), pages.end()), pages.end());
    operations_.push_back(host::group_by_chunk(pages));
  }
}

} // namespace faultline::program
