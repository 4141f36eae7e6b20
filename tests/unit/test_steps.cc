// Training steps in traces: the header's "steps" as the reader checks it, synth's steps, and
// the StepRepeater that runs a trace for N steps (hand-built traces with known ids and times;
// every repeated stream is written out and read back, so the reader checks that it is valid).
#include "sim/core/error.h"
#include "sim/synth/synth.h"
#include "sim/trace/inspect.h"
#include "sim/trace/reader.h"
#include "sim/trace/step_repeater.h"
#include "sim/trace/writer.h"
#include "test_support.h"

#include <catch2/catch.hpp>
#include <map>
#include <set>

using namespace faultline;
using namespace faultline::trace;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

constexpr Addr kSeg = 0x10000000; // a 64 MB managed segment the blocks live in

json steps_of(std::initializer_list<std::pair<uint64_t, Time>> steps) {
  json out = json::array();
  for (const auto& [first, start] : steps)
    out.push_back({{"first_record", first}, {"start_ns", start}});
  return out;
}

std::string read_error(const std::string& path) {
  return fltest::trace_error_of([&] {
    TraceReader reader(path);
    Record r;
    while (reader.next(r)) {
    }
  });
}

KernelRecord kernel(Time start, std::vector<uint64_t> args, Addr touches, Time duration = 100) {
  KernelRecord k;
  k.name = "k";
  k.start = start;
  k.duration = duration;
  k.args = std::move(args);
  k.accesses = {{touches / kBigPageSize, 0, AccessType::kWrite}};
  return k;
}

AllocRecord block(uint64_t id, Addr address, Time t, uint64_t segment = 1) {
  return {id, MemoryKind::kAllocatorBlock, address, kBigPageSize, t, segment};
}

// Everything a StepRepeater returns, and its step for each record.
struct Run {
  std::vector<Record> records;
  std::vector<int64_t> steps;
  RepeatStats stats;
};

// Runs `path` for `iterations` steps, writes what comes out to `out` and reads it back.
Run repeat(const std::string& path, uint64_t iterations, const std::string& out) {
  Run run;
  StepRepeater repeater(path, iterations);
  {
    TraceWriter writer(out, {{"source", "repeated"}});
    Record r;
    while (repeater.next(r)) {
      writer.write(r);
      run.records.push_back(r);
      run.steps.push_back(repeater.step());
    }
    writer.close();
  }
  run.stats = repeater.repeat_stats();
  TraceReader check(out);
  Record r;
  uint64_t n = 0;
  while (check.next(r)) ++n;
  REQUIRE(n == run.records.size());
  return run;
}

std::vector<const Record*> of_type(const Run& run, RecordType type) {
  std::vector<const Record*> out;
  for (const Record& r : run.records)
    if (r.type == type) out.push_back(&r);
  return out;
}

// Set-up: segment 1 (64 MB) and a persistent block 2 (the weights). Two steps of 100 ns each;
// each allocates block 10 + k at kSeg + 1 MB, runs a kernel on it and the weights, frees it.
std::string step_local_trace(const std::string& path) {
  TraceWriter w(path, {{"steps", steps_of({{2, 1000}, {5, 1100}})}});
  w.write(AllocRecord{1, MemoryKind::kManaged, kSeg, 64 << 20, 0, 0});
  w.write(block(2, kSeg, 0));
  for (uint64_t k = 0; k < 2; ++k) {
    const Time t = 1000 + 100 * static_cast<Time>(k);
    w.write(block(10 + k, kSeg + (1 << 20), t));
    w.write(kernel(t + 10, {2, 10 + k}, kSeg + (1 << 20)));
    w.write(FreeRecord{10 + k, t + 90});
  }
  w.close();
  return path;
}

} // namespace

TEST_CASE("steps: the reader rejects a bad \"steps\" header value naming its JSON path",
          "[steps][trace]") {
  fltest::TempDir dir;
  fltest::write_small_trace(dir.file("small.fltrace")); // 8 records; kernels at 100 and 1300
  const std::string path = dir.file("bad.fltrace");
  auto error_with = [&](const json& steps) {
    TraceReader small(dir.file("small.fltrace"));
    TraceWriter w(path, {{"steps", steps}});
    Record r;
    while (small.next(r)) w.write(r);
    w.close();
    return read_error(path);
  };
  const std::string at = path + ": header: \"steps\"";
  const json negative = {{{"first_record", -2}, {"start_ns", 0}}};
  const json fraction = {{{"first_record", 1.5}, {"start_ns", 0}}};
  const json text = {{{"first_record", 0}, {"start_ns", "0"}}};
  CHECK_THAT(error_with(3), Contains(at + ": expected an array of") && Contains("got number 3"));
  CHECK_THAT(error_with(json::array()), Contains(at + ": expected at least one step"));
  CHECK_THAT(error_with({1, 2}),
             Contains(at + "[0]: expected an object") && Contains("got number 1"));
  CHECK_THAT(error_with({{{"start_ns", 0}}}),
             Contains(at + "[0].first_record: expected a non-negative integer, missing"));
  CHECK_THAT(error_with({{{"first_record", 0}}}),
             Contains(at + "[0].start_ns: expected a non-negative integer, missing"));
  CHECK_THAT(error_with(negative),
             Contains(at + "[0].first_record: expected a non-negative integer, got a negative "
                           "number -2"));
  CHECK_THAT(error_with(fraction), Contains(at + "[0].first_record: expected a non-negative "
                                                 "integer, got a fractional number 1.5"));
  CHECK_THAT(error_with(text),
             Contains(at + "[0].start_ns: expected a non-negative integer, got string \"0\""));
  CHECK_THAT(error_with(steps_of({{0, 0}, {3, 100}, {3, 200}})),
             Contains(at + "[2].first_record: expected more than 3") &&
                 Contains("steps ascend), got 3"));
  CHECK_THAT(error_with(steps_of({{0, 50}, {3, 10}})),
             Contains(at + "[1].start_ns: expected at least 50") && Contains("got 10"));
  // Only the records can say these: a step's start after its first record (the kernel at 100,
  // timed record 2), and a step beyond the trace's 8 timed records, found at its end.
  CHECK_THAT(error_with(steps_of({{0, 0}, {2, 500}})),
             Contains(at +
                      "[1].start_ns: expected at most 100 ns, the time of the step's "
                      "first record (" +
                      path + ": record #3 (kernel) at byte") &&
                 Contains("got 500"));
  CHECK_THAT(error_with(steps_of({{0, 0}, {8, 3600}})),
             Contains(at + "[1].first_record: expected a timed record's index, below the "
                           "trace's 8 timed records; got 8"));
}

TEST_CASE("steps: the reader says which step each record belongs to", "[steps][trace]") {
  fltest::TempDir dir;
  const std::string path = step_local_trace(dir.file("t.fltrace"));
  TraceReader reader(path);
  REQUIRE(reader.steps_declared());
  REQUIRE(reader.steps().size() == 2);
  std::vector<int64_t> steps;
  Record r;
  while (reader.next(r)) steps.push_back(reader.step());
  CHECK(steps == std::vector<int64_t>{-1, -1, 0, 0, 0, 1, 1, 1});

  // Without the key: one step from record 0, starting at the first record's time.
  TraceReader plain(fltest::write_small_trace(dir.file("small.fltrace")));
  CHECK_FALSE(plain.steps_declared());
  REQUIRE(plain.next(r));
  CHECK(plain.step() == 0);
  CHECK(plain.steps().size() == 1);
  CHECK(plain.steps()[0].start_ns == 0);
}

TEST_CASE("steps: synth writes one step per iteration, and trace stats counts them", "[steps]") {
  fltest::TempDir dir;
  synth::Params p;
  p.footprint = 64 << 20;
  p.iterations = 3;
  p.layers = 4;
  const std::string path = dir.file("dnn.fltrace");
  synth::write_trace(p, path, "test");
  TraceReader reader(path);
  // Set-up: weights and gradients (2 x 4 allocations); each iteration: 4 activations, 12
  // kernels, 4 frees.
  const json& steps = reader.metadata()["steps"];
  REQUIRE(steps.size() == 3);
  CHECK(steps[0]["first_record"] == 8);
  CHECK(steps[1]["first_record"] == 28);
  CHECK(steps[2]["first_record"] == 48);
  CHECK(steps[0]["start_ns"] == 0);
  CHECK(steps[2]["start_ns"].get<Time>() == 2 * steps[1]["start_ns"].get<Time>());

  const TraceStats stats = compute_stats(path); // reads (and so checks) every record
  CHECK(stats.steps == 3);
  REQUIRE(stats.by_step.size() == 4);
  CHECK(stats.by_step[0].step == -1);
  CHECK(stats.by_step[0].records == 8);
  for (size_t i = 1; i < 4; ++i) {
    CHECK(stats.by_step[i].step == static_cast<int64_t>(i) - 1);
    CHECK(stats.by_step[i].kernels == 12);
    CHECK(stats.by_step[i].accesses == stats.by_step[1].accesses);
  }
  CHECK(stats.by_step[3].records == 28); // the last step holds the weights' tear-down too
  CHECK(stats.to_json()["steps"] == 3);
}

TEST_CASE("steps: a trace run for fewer steps than it holds ends after step N - 1", "[steps]") {
  fltest::TempDir dir;
  const std::string path = step_local_trace(dir.file("t.fltrace"));
  const Run run = repeat(path, 1, dir.file("out.fltrace"));
  CHECK(run.records.size() == 5); // set-up and step 0
  CHECK(run.steps.back() == 0);
  CHECK(run.stats.repetitions == 0);
  CHECK(repeat(path, 0, dir.file("out.fltrace")).records.size() == 8); // 0: as recorded
  CHECK(repeat(path, 2, dir.file("out.fltrace")).records.size() == 8);
}

TEST_CASE("steps: step-local allocations get fresh ids in each repetition, and times shift by the "
          "period",
          "[steps]") {
  fltest::TempDir dir;
  const std::string path = step_local_trace(dir.file("t.fltrace"));
  const Run run = repeat(path, 5, dir.file("out.fltrace"));
  REQUIRE(run.records.size() == 2 + 5 * 3);
  CHECK(run.stats.repetitions == 3);
  CHECK(run.stats.period_ns == 100);
  CHECK(run.steps == std::vector<int64_t>{-1, -1, 0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4});
  const auto kernels = of_type(run, RecordType::kKernel);
  const auto allocs = of_type(run, RecordType::kAlloc);
  REQUIRE(kernels.size() == 5);
  std::set<uint64_t> ids;
  for (size_t k = 0; k < 5; ++k) {
    const Record& a = *allocs[2 + k];
    CHECK(a.alloc.address == kSeg + (1 << 20)); // same addresses
    CHECK(a.alloc.segment == 1);                // the persistent segment keeps its id
    CHECK(a.alloc.time == 1000 + 100 * static_cast<Time>(k));
    CHECK(kernels[k]->kernel.start == 1010 + 100 * static_cast<Time>(k));
    CHECK(kernels[k]->kernel.args == std::vector<uint64_t>{2, a.alloc.id});
    ids.insert(a.alloc.id);
  }
  CHECK(ids == std::set<uint64_t>{10, 11, 12, 13, 14}); // fresh: above every id of the trace
  CHECK(run.stats.early_frees + run.stats.skipped_frees + run.stats.paired_frees == 0);
}

TEST_CASE("steps: a carried allocation freed in the next step pairs with the previous pass's",
          "[steps]") {
  // The loss tensor: step k allocates L_k, which step k + 1 frees. Freed before the next is
  // allocated, or (second trace) after, which the repetition must free early, since the step
  // allocates over the previous pass's instance.
  fltest::TempDir dir;
  for (const bool free_first : {true, false}) {
    INFO((free_first ? "free, then alloc" : "alloc, then free"));
    const std::string path = dir.file("loss.fltrace");
    {
      TraceWriter w(path, {{"steps", steps_of({{1, 100}, {3, 200}})}});
      w.write(AllocRecord{1, MemoryKind::kManaged, kSeg, 64 << 20, 0, 0});
      w.write(block(10, kSeg, 100));                   // L0
      w.write(kernel(110, {10}, kSeg));                // step 0 ends
      if (free_first) w.write(FreeRecord{10, 200});    // step 1: frees L0...
      w.write(block(11, kSeg + kBigPageSize, 200));    // ... allocates L1
      if (!free_first) w.write(FreeRecord{10, 200});   // (or frees L0 after)
      w.write(kernel(210, {11}, kSeg + kBigPageSize)); // L1 is live at the end
      w.close();
    }
    const Run run = repeat(path, 6, dir.file("out.fltrace"));
    CHECK(run.stats.repetitions == 4);
    const auto frees = of_type(run, RecordType::kFree);
    const auto allocs = of_type(run, RecordType::kAlloc);
    REQUIRE(allocs.size() == 1 + 6);
    CHECK(frees.size() == 5); // one L freed per step after the first: no pile-up
    for (size_t k = 1; k < 6; ++k) {
      // Pass k frees the previous step's instance, at the start of the step.
      CHECK(frees[k - 1]->free.id == allocs[k]->alloc.id);
      CHECK(frees[k - 1]->free.time == 100 + 100 * static_cast<Time>(k));
    }
    if (free_first) {
      CHECK(run.stats.paired_frees == 4);
      CHECK(run.stats.early_frees == 0);
    } else {
      CHECK(run.stats.early_frees == 4);
      CHECK(run.stats.skipped_frees == 4); // its pair was freed early
    }
    // Each kernel names the instance of its own pass.
    const auto kernels = of_type(run, RecordType::kKernel);
    for (size_t k = 0; k < 6; ++k) CHECK(kernels[k]->kernel.args[0] == allocs[1 + k]->alloc.id);
  }
}

TEST_CASE("steps: blocks of a step-local segment follow their segment's fresh id", "[steps]") {
  fltest::TempDir dir;
  const std::string path = dir.file("seg.fltrace");
  {
    // No "steps": the whole trace is one step, repeated whole; period = its span (300 ns).
    TraceWriter w(path, {});
    w.write(AllocRecord{5, MemoryKind::kManaged, kSeg, 4 << 20, 100, 0});
    w.write(block(6, kSeg + kBigPageSize, 100, 5));
    w.write(kernel(150, {6, 5}, kSeg + kBigPageSize, 250));
    w.write(FreeRecord{6, 380});
    w.write(FreeRecord{5, 390});
    w.close();
  }
  const Run run = repeat(path, 3, dir.file("out.fltrace"));
  CHECK(run.stats.period_ns == 300); // from 100 to the kernel's end at 400
  const auto allocs = of_type(run, RecordType::kAlloc);
  REQUIRE(allocs.size() == 6);
  for (size_t k = 0; k < 3; ++k) {
    const AllocRecord& seg = allocs[2 * k]->alloc;
    const AllocRecord& b = allocs[2 * k + 1]->alloc;
    CHECK(seg.time == 100 + 300 * static_cast<Time>(k));
    CHECK(b.segment == seg.id);
    CHECK(b.kind == MemoryKind::kAllocatorBlock);
    CHECK(of_type(run, RecordType::kKernel)[k]->kernel.args == std::vector<uint64_t>{b.id, seg.id});
  }
  CHECK(allocs[2]->alloc.id == 7); // fresh ids start above the trace's largest
}

TEST_CASE("steps: tear-down frees of set-up allocations happen once, in the final pass",
          "[steps]") {
  fltest::TempDir dir;
  const std::string path = dir.file("teardown.fltrace");
  {
    TraceWriter w(path, {{"steps", steps_of({{1, 100}, {3, 200}})}});
    w.write(AllocRecord{1, MemoryKind::kManaged, kSeg, 4 << 20, 0, 0}); // the model
    w.write(kernel(100, {1}, kSeg));
    w.write(kernel(150, {1}, kSeg));
    w.write(kernel(200, {1}, kSeg)); // the last step...
    w.write(FreeRecord{1, 300});     // ... ends the program
    w.close();
  }
  const Run run = repeat(path, 4, dir.file("out.fltrace"));
  CHECK(run.stats.held_frees == 1);
  const auto frees = of_type(run, RecordType::kFree);
  REQUIRE(frees.size() == 1);
  CHECK(frees[0]->free.id == 1);
  CHECK(frees[0]->free.time == 300 + 2 * 100);
  CHECK(&run.records.back() == frees[0]);
  for (const Record* k : of_type(run, RecordType::kKernel)) CHECK(k->kernel.args.size() == 1);
}

TEST_CASE("steps: a repetition never goes back in time, even when the period is short", "[steps]") {
  fltest::TempDir dir;
  const std::string path = dir.file("short.fltrace");
  {
    // Step 1 starts 10 ns after step 0 but lasts 500 ns: the period (10) is shorter.
    TraceWriter w(path, {{"steps", steps_of({{1, 0}, {2, 10}})}});
    w.write(AllocRecord{1, MemoryKind::kManaged, kSeg, 4 << 20, 0, 0});
    w.write(kernel(0, {1}, kSeg));
    w.write(kernel(10, {1}, kSeg));
    w.write(kernel(510, {1}, kSeg));
    w.close();
  }
  const Run run = repeat(path, 4, dir.file("out.fltrace")); // the writer refuses time going back
  const auto kernels = of_type(run, RecordType::kKernel);
  REQUIRE(kernels.size() == 7);
  CHECK(kernels[3]->kernel.start == 510); // pass 1's first kernel: 10 + 10, held at 510
  CHECK(kernels[4]->kernel.start == 520); // 510 + 10
}

TEST_CASE("steps: a held free is made where the step allocates over its allocation", "[steps]") {
  // Step 0's block 10 is freed in step 1 with nothing carried to pair it with, so its free
  // waits for the final pass; but step 1 then allocates block 11 where it lay.
  fltest::TempDir dir;
  const std::string path = dir.file("held.fltrace");
  {
    TraceWriter w(path, {{"steps", steps_of({{1, 100}, {3, 200}})}});
    w.write(AllocRecord{1, MemoryKind::kManaged, kSeg, 64 << 20, 0, 0});
    w.write(block(10, kSeg, 100));
    w.write(kernel(110, {10}, kSeg));
    w.write(FreeRecord{10, 200});
    w.write(block(11, kSeg, 200));
    w.write(kernel(210, {11}, kSeg));
    w.write(FreeRecord{11, 290});
    w.close();
  }
  const Run run = repeat(path, 4, dir.file("out.fltrace"));
  CHECK(run.stats.held_frees == 1);
  CHECK(run.stats.early_frees == 1);   // made before block 11, as the trace had it
  CHECK(run.stats.skipped_frees == 1); // the final pass finds it freed already
  const auto frees = of_type(run, RecordType::kFree);
  REQUIRE(frees.size() == 4);
  CHECK(frees[0]->free.id == 10);
  CHECK(frees[0]->free.time == 200);
}
