// Issue-time traces (trace::Timeline::kIssue): the simulator's CPU runs ahead of its GPU. The
// kernels here touch nothing, so times are the timeline's alone.
#include "policies/registry.h"
#include "sim/run/simulator.h"
#include "sim/synth/synth.h"
#include "sim/trace/writer.h"
#include "sim_fixture.h"
#include "sim_test_helpers.h"

#include <catch2/catch.hpp>

using namespace faultline;
using namespace simtest;

namespace {

// Records every launch and kernel end it hears, with the time, and the frees.
struct Heard {
  bool launch;
  uint64_t kernel;
  Time now;
};
std::vector<Heard> g_heard;
std::vector<std::pair<uint64_t, Time>> g_freed; // id, time heard

class LaunchLog : public policies::IPolicy {
public:
  LaunchLog(const nlohmann::json&, const std::string&) {
    g_heard.clear();
    g_freed.clear();
  }
  void on_free(const policies::FreeEvent& e, policies::Actions&) override {
    g_freed.push_back({e.id, e.now});
  }
  void on_kernel_launch(const policies::LaunchEvent& e, policies::Actions&) override {
    g_heard.push_back({true, e.kernel, e.now});
  }
  void on_kernel_end(const policies::KernelEndEvent& e, policies::Actions&) override {
    g_heard.push_back({false, e.kernel, e.now});
  }
};
FAULTLINE_REGISTER_POLICY(LaunchLog, "test-launch-log");

trace::KernelRecord empty_kernel(Time issue, Time duration) {
  trace::KernelRecord k;
  k.name = "k";
  k.start = issue;
  k.duration = duration;
  return k;
}

trace::Record kernel_record(Time issue, Time duration) {
  trace::Record r;
  r.type = trace::RecordType::kKernel;
  r.kernel = empty_kernel(issue, duration);
  return r;
}

trace::Record sync_record(Time time, Time wait) {
  trace::Record r;
  r.type = trace::RecordType::kSync;
  r.sync = {time, trace::SyncKind::kDevice, 0, wait};
  return r;
}

trace::Record free_record(uint64_t id, Time time) {
  trace::Record r;
  r.type = trace::RecordType::kFree;
  r.free = {id, time};
  return r;
}

// A trace of one managed allocation (id 1) and the records, with the given timeline.
std::string write_timed(const Scratch& s, const std::vector<trace::Record>& records,
                        const char* timeline = "issue") {
  const std::string path = s.file("t.fltrace");
  nlohmann::json meta = {{"source", "test"}};
  if (timeline) meta["timeline"] = timeline;
  trace::TraceWriter w(path, meta);
  w.write(trace::AllocRecord{1, trace::MemoryKind::kManaged, kBase, kBlockSize, 0, 0});
  for (const auto& r : records) w.write(r);
  w.close();
  return path;
}

Outcome run(const std::string& trace, const char* policy = "ondemand",
            const char* mode = "driver") {
  nlohmann::json cfg = Scratch::run_config();
  cfg["policy"] = {{"name", policy}};
  cfg["capacity"]["mode"] = mode;
  return simulate(cfg, trace, 4);
}

} // namespace

TEST_CASE("a GPU-bound run of launches executes back to back", "[sim][run-ahead]") {
  Scratch s;
  // The CPU issues a kernel every 10 ns; each runs 1 us.
  std::vector<trace::Record> records;
  for (int i = 0; i < 5; ++i) records.push_back(kernel_record(10 * i, 1000));
  const Outcome o = run(write_timed(s, records));
  CHECK(o.end == 5000);
  REQUIRE(o.stats.kernel_rows.size() == 5);
  for (size_t i = 0; i < 5; ++i) CHECK(o.stats.kernel_rows[i].start == static_cast<Time>(1000 * i));
}

TEST_CASE("a sync blocks the CPU until the GPU's work is done", "[sim][run-ahead]") {
  Scratch s;
  // Kernel A (10 us) at 0; the CPU syncs at 1 us and waited 9 us in the capture; B follows
  // 0.5 us after the sync returned.
  const Outcome o = run(write_timed(
      s, {kernel_record(0, 10000), sync_record(1000, 9000), kernel_record(10500, 2000)}));
  REQUIRE(o.stats.kernel_rows.size() == 2);
  CHECK(o.stats.kernel_rows[1].start == 10500);
  CHECK(o.end == 12500);
}

TEST_CASE("the sync's wait is the simulation's: a slower GPU makes it longer", "[sim][run-ahead]") {
  Scratch s;
  // As recorded the GPU's work took 3 us, but here kernel A takes 10 us: B starts 0.5 us after
  // A's end, not at its recorded time.
  const Outcome o = run(write_timed(
      s, {kernel_record(0, 10000), sync_record(1000, 2000), kernel_record(3500, 2000)}));
  CHECK(o.stats.kernel_rows.at(1).start == 10500);
}

TEST_CASE("a long CPU gap leaves the GPU idle", "[sim][run-ahead]") {
  Scratch s;
  const Outcome o = run(write_timed(s, {kernel_record(0, 1000), kernel_record(50000, 1000)}));
  CHECK(o.stats.kernel_rows.at(1).start == 50000);
  CHECK(o.end == 51000);
}

TEST_CASE("the run ends when the GPU's last kernel does, not when the CPU's records do",
          "[sim][run-ahead]") {
  Scratch s;
  const Outcome o = run(write_timed(s, {kernel_record(0, 1000), kernel_record(10, 7000)}));
  CHECK(o.end == 8000);
}

TEST_CASE("a policy hears launches as the CPU issues them, ahead by the queue's depth",
          "[sim][run-ahead]") {
  Scratch s;
  std::vector<trace::Record> records;
  for (int i = 0; i < 4; ++i) records.push_back(kernel_record(100 * i, 1000));
  run(write_timed(s, records), "test-launch-log");
  // Launches at 0, 100, 200, 300 (the CPU's times); ends at 1000, 2000, ...: all four are heard
  // before the first kernel ends.
  REQUIRE(g_heard.size() == 8);
  for (int i = 0; i < 4; ++i) {
    CHECK(g_heard[i].launch);
    CHECK(g_heard[i].kernel == static_cast<uint64_t>(i));
    CHECK(g_heard[i].now == 100 * i);
  }
  for (int i = 0; i < 4; ++i) {
    CHECK_FALSE(g_heard[4 + i].launch);
    CHECK(g_heard[4 + i].now == 1000 * (i + 1));
  }
}

TEST_CASE("a sync bounds how far ahead a policy hears", "[sim][run-ahead]") {
  Scratch s;
  run(write_timed(s, {kernel_record(0, 1000), kernel_record(10, 1000), sync_record(20, 1980),
                      kernel_record(2100, 1000)}),
      "test-launch-log");
  // The third launch waits for the sync: heard at the GPU's idle (2000) plus 100 ns.
  REQUIRE(g_heard.size() == 6);
  CHECK(g_heard[4].launch);
  CHECK(g_heard[4].kernel == 2);
  CHECK(g_heard[4].now == 2100);
}

TEST_CASE("capacity mode budget waits for each kernel, as the live replay does",
          "[sim][run-ahead]") {
  Scratch s;
  std::vector<trace::Record> records;
  for (int i = 0; i < 3; ++i) records.push_back(kernel_record(10 * i, 1000));
  run(write_timed(s, records), "test-launch-log", "budget");
  REQUIRE(g_heard.size() == 6);
  // launch 0, end 0, launch 1 ...: each launch heard after the kernel before it ended
  for (int i = 0; i < 3; ++i) {
    CHECK(g_heard[2 * i].launch);
    CHECK_FALSE(g_heard[2 * i + 1].launch);
  }
}

TEST_CASE("a serial trace keeps its recorded gaps after each kernel", "[sim][run-ahead]") {
  Scratch s;
  // Without the timeline key: the second kernel follows the first's end by its recorded gap
  // (recorded end 1000, next record at 1500: 500 ns), however long the first ran.
  const Outcome o =
      run(write_timed(s, {kernel_record(0, 1000), kernel_record(1500, 1000)}, nullptr));
  CHECK(o.stats.kernel_rows.at(1).start == 1500);
  const Outcome ahead =
      run(write_timed(s, {kernel_record(0, 1000), kernel_record(10, 1000)}, nullptr));
  CHECK(ahead.end == 2000);
}

TEST_CASE("a block's free waits for the kernels issued before it; a segment's for all",
          "[sim][run-ahead]") {
  Scratch s;
  const std::string path = s.file("t.fltrace");
  {
    trace::TraceWriter w(path, {{"source", "test"}, {"timeline", "issue"}});
    w.write(trace::AllocRecord{1, trace::MemoryKind::kManaged, kBase, kBlockSize, 0, 0});
    w.write(trace::AllocRecord{2, trace::MemoryKind::kAllocatorBlock, kBase, kBigPageSize, 0, 1});
    trace::KernelRecord k = empty_kernel(0, 5000);
    k.args = {2};
    w.write(k);
    w.write(trace::FreeRecord{2, 10}); // the CPU frees the block while the kernel runs
    w.write(empty_kernel(20, 3000));
    w.write(trace::FreeRecord{1, 30}); // cudaFree: waits for the GPU
    w.close();
  }
  const Outcome o = run(path, "test-launch-log");
  // The block's free reaches the policy when the GPU reaches it (after the first kernel, before
  // the second); the segment's once the GPU is idle. A policy that drops freed blocks never drops
  // one a queued kernel still uses.
  REQUIRE(g_freed.size() == 2);
  CHECK(g_freed[0] == std::pair<uint64_t, Time>{2, 5000});
  CHECK(g_freed[1] == std::pair<uint64_t, Time>{1, 8000});
  CHECK(o.stats.kernel_rows.at(1).start == 5000);
}

TEST_CASE("a synthetic issue-time trace at full capacity runs its steps at the program's time",
          "[sim][run-ahead]") {
  Scratch s;
  synth::Params p;
  p.pattern = "stream";
  p.footprint = 8 * kBlockSize;
  p.iterations = 3;
  p.kernels_per_iteration = 4;
  p.launch_gap_ns = 2000;
  const std::string path = s.file("issue.fltrace");
  synth::write_trace(p, path, "test");
  const config::RunConfig config = simtest::parse(Scratch::run_config());
  Simulator sim(config, path, 16);
  const Stats& stats = sim.run();
  std::vector<StepRow> rows;
  for (const StepRow& r : stats.step_rows)
    if (r.step >= 0) rows.push_back(r);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].faults > 0); // the first touches
  for (size_t i = 1; i < 3; ++i) {
    CHECK(rows[i].faults == 0);
    CHECK(rows[i].program_ns > 0);
    CHECK(rows[i].end - rows[i].start == rows[i].program_ns);
  }
}

TEST_CASE("the policy's decisions at each launch delay the program's CPU by policy_launch_ns",
          "[sim][run-ahead]") {
  Scratch s;
  // The CPU issues a kernel every 10 ns, each 100 ns long: CPU-bound once each launch costs the
  // CPU 1 us of the policy's decisions, as when the policy runs inside the program.
  std::vector<trace::Record> records;
  for (int i = 0; i < 4; ++i) records.push_back(kernel_record(10 * i, 100));
  const std::string trace = write_timed(s, records);
  nlohmann::json cfg = Scratch::run_config();
  cfg["policy"] = {{"name", "ondemand"}};
  CHECK(simulate(cfg, trace, 4).end == 400); // back to back
  cfg["policy_launch_ns"] = 1000;
  const Outcome o = simulate(cfg, trace, 4);
  REQUIRE(o.stats.kernel_rows.size() == 4);
  for (size_t i = 1; i < 4; ++i)
    CHECK(o.stats.kernel_rows[i].launched == o.stats.kernel_rows[i - 1].launched + 1000 + 10);
  CHECK(o.end == 3 * 1010 + 1000); // the CPU decides after the last launch too
  cfg["policy_launch_ns"] = -1;
  CHECK_THROWS_WITH(simulate(cfg, trace, 4), Catch::Contains("policy_launch_ns"));
}

TEST_CASE("capacity mode program: the policy hears a launch in the GPU's turn, the CPU still "
          "runs ahead",
          "[sim][run-ahead]") {
  Scratch s;
  std::vector<trace::Record> records;
  for (int i = 0; i < 3; ++i) records.push_back(kernel_record(10 * i, 1000));
  const Outcome o = run(write_timed(s, records), "test-launch-log", "program");
  REQUIRE(g_heard.size() == 6);
  // launch 0 at 0, then launch 1 when kernel 0 ends (1000), as `faultline run`'s books hold at
  // launch 1 what the GPU holds once it reaches it; the kernels still run back to back.
  for (int i = 0; i < 3; ++i) {
    CHECK(g_heard[2 * i].launch);
    CHECK(g_heard[2 * i].now == 1000 * i);
    CHECK_FALSE(g_heard[2 * i + 1].launch);
  }
  CHECK(o.end == 3000);
}

namespace {

trace::Record touching_kernel(Time issue, Time duration, unsigned pages) {
  trace::Record r = kernel_record(issue, duration);
  for (unsigned p = 0; p < pages; ++p)
    r.kernel.accesses.push_back({kBase / kBigPageSize + p, 0, AccessType::kWrite});
  return r;
}

trace::Record host_write(Time time, unsigned first_page, unsigned pages) {
  trace::Record r;
  r.type = trace::RecordType::kHostAccess;
  r.host = {time, kBase + first_page * kBigPageSize, pages * kBigPageSize, AccessType::kWrite};
  return r;
}

} // namespace

TEST_CASE("the captured program's host faults lie in the trace's gap: the run plays its own in "
          "their place",
          "[sim][run-ahead]") {
  Scratch s;
  const config::RunConfig c = parse(Scratch::run_config());
  // Kernel A writes 4 big pages; the CPU syncs, then writes them (the pages came back to the host
  // in the captured program, inside the 399 us gap) and at its recorded time launches B on them.
  const std::vector<trace::Record> records = {touching_kernel(0, 1000, 4), sync_record(100, 900),
                                              host_write(400000, 0, 4),
                                              touching_kernel(400000, 1000, 4)};
  const Outcome o = run(write_timed(s, records));
  const Time in_trace = 4 * c.gpu.host_fault_ns + c.host_link.reverse.transfer_ns(4 * kBigPageSize);
  CHECK(o.stats.host_in_trace_ns == in_trace);
  CHECK(o.stats.host_ns == in_trace); // here the run's pages were on the GPU, as the program's
  // B is issued at its recorded distance from the sync's end (A's, which its faults made late):
  // the host's faults are not paid twice.
  REQUIRE(o.stats.kernel_rows.size() == 2);
  REQUIRE(in_trace < 399000);
  CHECK(o.stats.kernel_rows[1].launched == o.stats.kernel_rows[0].end + 399000);

  // Pages no kernel had touched were on the host in the captured program: nothing to take out.
  const Outcome fresh =
      run(write_timed(s, {touching_kernel(0, 1000, 4), sync_record(100, 900),
                          host_write(400000, 8, 4), touching_kernel(400000, 1000, 4)}));
  CHECK(fresh.stats.host_in_trace_ns == 0);
  CHECK(fresh.stats.kernel_rows.at(1).launched ==
        fresh.stats.kernel_rows.at(0).end + 399000 + fresh.stats.host_ns);

  // A second touch of the same pages finds them on the host in the captured program too.
  std::vector<trace::Record> twice = records;
  twice.insert(twice.begin() + 3, host_write(400000, 0, 4));
  CHECK(run(write_timed(s, twice)).stats.host_in_trace_ns == in_trace);

  // A serial trace's gaps are kept as recorded: nothing is taken out.
  CHECK(run(write_timed(s, records, "serial")).stats.host_in_trace_ns == 0);
}
