// `faultline alloc relayout`: the re-placed trace keeps the source's training steps, each
// beginning at the record where the source's began (the new trace has other records: segments
// come and go), so the reader and the simulator take it.
#include "sim/alloc/relayout.h"
#include "sim/trace/reader.h"
#include "sim/trace/steps.h"
#include "source_dir.h"
#include "test_support.h"

#include <catch2/catch.hpp>

using namespace faultline;

TEST_CASE("relayout: a trace's steps begin where the source's did", "[alloc][relayout]") {
  const std::string source = std::string(FAULTLINE_SOURCE_DIR) + "/traces/real/gpt2-small.fltrace";
  const std::vector<trace::Step> before =
      trace::parse_steps(trace::TraceReader(source).metadata(), source);
  REQUIRE(before.size() == 3);
  fltest::TempDir dir;
  for (const char* allocator : {"caching", "expandable", "gmlake"}) {
    INFO(allocator);
    const std::string out = dir.file(std::string(allocator) + ".fltrace");
    alloc::relayout(source, out, allocator, alloc::ReplayConfig{});
    trace::TraceReader reader(out);
    const std::vector<trace::Step> after = trace::parse_steps(reader.metadata(), out);
    REQUIRE(after.size() == before.size());
    // Reading every record checks each step's first record and start time against the records.
    trace::Record r;
    uint64_t records = 0;
    std::vector<Time> first_times(after.size(), -1);
    while (reader.next(r)) {
      for (size_t i = 0; i < after.size(); ++i)
        if (after[i].first_record == records) first_times[i] = r.time();
      ++records;
    }
    for (size_t i = 0; i < after.size(); ++i) {
      CHECK(after[i].start_ns == before[i].start_ns);
      CHECK(first_times[i] >= after[i].start_ns);
      if (i > 0) CHECK(after[i].first_record > after[i - 1].first_record);
    }
  }
}
