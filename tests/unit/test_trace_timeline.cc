// Trace format v2's timeline: kernels' queue delays, syncs' waits, the header's "timeline" and
// "program_step_ns", and version 1 traces read as serial.
#include "sim/trace/inspect.h"
#include "sim/trace/step_repeater.h"
#include "sim/trace/writer.h"
#include "trace_support.h"

using namespace faultline;
using namespace faultline::trace;
using namespace faultline::trace::testing;
using Catch::Matchers::Contains;

namespace {

nlohmann::json header_with(const nlohmann::json& extra) {
  nlohmann::json h = default_metadata();
  for (auto& [k, v] : extra.items()) h[k] = v;
  return h;
}

} // namespace

TEST_CASE("v2 round-trips a kernel's queue delay and a sync's wait", "[trace][timeline]") {
  fltest::TempDir dir;
  const std::string path = dir.file("t.fltrace");
  {
    TraceWriter w(path, {{"timeline", "issue"}, {"program_step_ns", {5000}}});
    w.write(AllocRecord{1, MemoryKind::kManaged, 0x10000000, kBlockSize, 0, 0});
    KernelRecord k;
    k.name = "k";
    k.start = 100;
    k.duration = 1000;
    k.queued = 250;
    w.write(k);
    w.write(SyncRecord{200, SyncKind::kStream, 3, 1150});
    w.close();
  }
  TraceReader r(path);
  CHECK(r.version() == 2);
  CHECK(r.timeline() == Timeline::kIssue);
  CHECK(r.program_step_ns() == std::vector<Time>{5000});
  Record rec;
  REQUIRE(r.next(rec));
  REQUIRE(r.next(rec));
  CHECK(rec.kernel.queued == 250);
  REQUIRE(r.next(rec));
  CHECK(rec.sync.wait == 1150);
  CHECK(rec.sync.stream == 3);
  CHECK_FALSE(r.next(rec));
  const TraceStats s = compute_stats(path);
  CHECK(s.timeline == Timeline::kIssue);
  CHECK(s.sync_wait_ns == 1150);
  CHECK(s.queued_ns == 250);
  REQUIRE(s.by_step.size() == 1);
  CHECK(s.by_step[0].program_ns == 5000);
  CHECK(s.to_json()["program_step_ns"] == nlohmann::json::array({5000}));
}

TEST_CASE("a version 1 trace reads as serial, with no queue delays or waits", "[trace][timeline]") {
  fltest::TempDir dir;
  const std::string path = dir.file("v1.fltrace");
  RawTrace(default_metadata().dump(), 1)
      .alloc(0, 1, MemoryKind::kManaged, 0x10000000, kBlockSize)
      .string(0, "k")
      .kernel(10, 0, 500, {1}, {{0x1000, AccessType::kRead, 0}})
      .sync(5, 0)
      .end(3)
      .write(path);
  TraceReader r(path);
  CHECK(r.version() == 1);
  CHECK(r.timeline() == Timeline::kSerial);
  Record rec;
  REQUIRE(r.next(rec));
  REQUIRE(r.next(rec));
  CHECK(rec.kernel.duration == 500);
  CHECK(rec.kernel.queued == 0);
  REQUIRE(r.next(rec));
  CHECK(rec.sync.wait == 0);
  CHECK_FALSE(r.next(rec));
  // A v1 trace passes through the v2 writer (rewrite_steps) and stays serial.
  rewrite_steps(path, {Step{0, 0}});
  TraceReader again(path);
  CHECK(again.version() == 2);
  CHECK(again.timeline() == Timeline::kSerial);
}

TEST_CASE("a bad timeline or program_step_ns names its key", "[trace][timeline][errors]") {
  fltest::TempDir dir;
  const std::string path = dir.file("bad.fltrace");
  SECTION("timeline not a known word") {
    RawTrace(header_with({{"timeline", 3}}).dump()).end(0).write(path);
    CHECK_THAT(trace_error(path), Contains(path) && Contains("header: \"timeline\"") &&
                                      Contains("expected \"issue\" or \"serial\", got 3"));
  }
  SECTION("issue in a version 1 trace") {
    RawTrace(header_with({{"timeline", "issue"}}).dump(), 1).end(0).write(path);
    CHECK_THAT(trace_error(path), Contains("\"issue\" needs trace format version 2") &&
                                      Contains("this trace is version 1"));
  }
  SECTION("program_step_ns of the wrong length") {
    RawTrace(header_with({{"program_step_ns", {1, 2}}}).dump()).end(0).write(path);
    CHECK_THAT(trace_error(path), Contains("header: \"program_step_ns\"") &&
                                      Contains("expected an array of 1 positive integers") &&
                                      Contains("got 2 values"));
  }
  SECTION("program_step_ns not an array") {
    RawTrace(header_with({{"program_step_ns", "fast"}}).dump()).end(0).write(path);
    CHECK_THAT(trace_error(path), Contains("\"program_step_ns\"") && Contains("got string"));
  }
  SECTION("a step time that is not a positive integer") {
    nlohmann::json steps = {{{"first_record", 0}, {"start_ns", 0}},
                            {{"first_record", 1}, {"start_ns", 0}}};
    RawTrace(header_with({{"steps", steps}, {"program_step_ns", {100, -5}}}).dump())
        .end(0)
        .write(path);
    CHECK_THAT(trace_error(path), Contains("\"program_step_ns\"[1]") &&
                                      Contains("expected a positive integer") &&
                                      Contains("a negative number -5"));
    RawTrace(header_with({{"steps", steps}, {"program_step_ns", {100, 2.5}}}).dump())
        .end(0)
        .write(path);
    CHECK_THAT(trace_error(path), Contains("\"program_step_ns\"[1]") && Contains("fractional"));
  }
  SECTION("a sync wait past 2^62 ns") {
    RawTrace().sync(10, 0, uint64_t{1} << 62).end(1).write(path);
    CHECK_THAT(trace_error(path), Contains("record #0 (sync)") && Contains("sync wait of"));
  }
  SECTION("a queue delay past 2^62 ns") {
    RawTrace().string(0, "k").kernel(10, 0, 500, {}, {}, uint64_t{1} << 62).end(1).write(path);
    CHECK_THAT(trace_error(path), Contains("(kernel)") && Contains("kernel queued"));
  }
}

TEST_CASE("repeated steps take the last captured step's program time", "[trace][timeline]") {
  fltest::TempDir dir;
  const std::string path = dir.file("t.fltrace");
  {
    TraceWriter w(path, {{"timeline", "issue"},
                         {"steps",
                          {{{"first_record", 1}, {"start_ns", 100}},
                           {{"first_record", 2}, {"start_ns", 2000}}}},
                         {"program_step_ns", {1900, 1700}}});
    w.write(AllocRecord{1, MemoryKind::kManaged, 0x10000000, kBlockSize, 0, 0});
    for (Time t : {100, 2000}) {
      KernelRecord k;
      k.name = "k";
      k.start = t;
      k.duration = 1000;
      w.write(k);
    }
    w.close();
  }
  StepRepeater r(path, 4);
  CHECK(r.timeline() == Timeline::kIssue);
  CHECK(r.program_step_ns(0) == 1900);
  CHECK(r.program_step_ns(1) == 1700);
  CHECK(r.program_step_ns(3) == 1700);
  CHECK(r.program_step_ns(-1) == 0);
}
