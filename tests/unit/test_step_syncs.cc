// `faultline capture step-syncs`: the step-end syncs a trace's capture missed.
#include "sim/trace/reader.h"
#include "sim/trace/writer.h"
#include "test_support.h"
#include "tracer/convert/step_syncs.h"

#include <catch2/catch.hpp>

using namespace faultline;
using namespace faultline::trace;
using Catch::Matchers::Contains;

namespace {

KernelRecord kernel(Time issue, Time queued, Time duration) {
  KernelRecord k;
  k.name = "k";
  k.start = issue;
  k.queued = queued;
  k.duration = duration;
  return k;
}

// Two steps: step 0's kernels end on the GPU at 9000 though the CPU's last record is at 200;
// step 1's end at 10600, after its last record at 10100.
std::string write_two_steps(const std::string& path, const char* timeline = "issue") {
  TraceWriter w(path, {{"timeline", timeline},
                       {"steps",
                        {{{"first_record", 1}, {"start_ns", 100}},
                         {{"first_record", 4}, {"start_ns", 10000}}}}});
  w.write(AllocRecord{1, MemoryKind::kManaged, 0x10000000, kBlockSize, 0, 0});
  w.write(kernel(100, 10, 4000));   // GPU 110 .. 4110
  w.write(kernel(150, 3960, 4890)); // GPU 4110 .. 9000
  w.write(FreeRecord{1, 200});      // never mind the id: a free of the segment
  w.write(AllocRecord{2, MemoryKind::kManaged, 0x10000000, kBlockSize, 10000, 0});
  w.write(kernel(10050, 50, 500)); // GPU 10100 .. 10600
  w.write(FreeRecord{2, 10100});
  w.close();
  return path;
}

} // namespace

TEST_CASE("step-syncs adds a device sync at each step's end, waiting for its GPU work",
          "[capture][timeline]") {
  fltest::TempDir dir;
  const std::string in = write_two_steps(dir.file("in.fltrace"));
  const std::string out = dir.file("out.fltrace");
  CHECK(capture::add_step_syncs(in, out) == 2);
  TraceReader r(out);
  CHECK(r.metadata()["step_syncs_added"] == 2);
  REQUIRE(r.steps().size() == 2);
  CHECK(r.steps()[1].first_record == 5); // one sync before it
  std::vector<Record> records;
  Record rec;
  while (r.next(rec)) records.push_back(rec);
  REQUIRE(records.size() == 9);
  REQUIRE(records[4].type == RecordType::kSync);
  CHECK(records[4].sync.kind == SyncKind::kDevice);
  CHECK(records[4].sync.time == 200);
  CHECK(records[4].sync.wait == 8800);
  REQUIRE(records[8].type == RecordType::kSync);
  CHECK(records[8].sync.time == 10100);
  CHECK(records[8].sync.wait == 500);
}

TEST_CASE("step-syncs refuses a serial trace and one whose step ends were recorded",
          "[capture][timeline][errors]") {
  fltest::TempDir dir;
  const std::string out = dir.file("out.fltrace");
  const std::string serial = write_two_steps(dir.file("serial.fltrace"), "serial");
  CHECK_THAT(fltest::trace_error_of([&] { capture::add_step_syncs(serial, out); }),
             Contains("serial.fltrace") && Contains("\"timeline\"") && Contains("serial"));
  const std::string synced = dir.file("synced.fltrace");
  {
    TraceWriter w(synced,
                  {{"timeline", "issue"}, {"steps", {{{"first_record", 0}, {"start_ns", 0}}}}});
    w.write(kernel(0, 0, 100));
    w.write(SyncRecord{10, SyncKind::kDevice, 0, 90});
    w.close();
  }
  CHECK_THAT(fltest::trace_error_of([&] { capture::add_step_syncs(synced, out); }),
             Contains("(sync)") && Contains("device sync already"));
  const std::string no_steps = dir.file("nosteps.fltrace");
  {
    TraceWriter w(no_steps, {{"timeline", "issue"}});
    w.write(kernel(0, 0, 100));
    w.close();
  }
  CHECK_THAT(fltest::trace_error_of([&] { capture::add_step_syncs(no_steps, out); }),
             Contains("\"steps\"") && Contains("missing"));
}
