// The simulator in capacity mode "budget": the live replay's rules (room made before each kernel,
// kernels cut into parts, prefetches one call per block), its costs and invariants.
#include "sim/run/simulator.h"
#include "sim/synth/synth.h"
#include "sim/trace/inspect.h"
#include "sim_fixture.h"
#include "sim_test_helpers.h"
#include "source_dir.h"

#include <catch2/catch.hpp>

using namespace faultline;
using namespace simtest;

namespace {

// One kernel touching one page of each of two unpopulated blocks, one allocation it names: pump
// prefetches both blocks at its launch.
std::string one_kernel_naming_two_blocks(const Scratch& s) {
  const std::string path = s.file("p.fltrace");
  trace::TraceWriter w(path, {{"source", "test"}});
  w.write(trace::AllocRecord{1, trace::MemoryKind::kManaged, kBase, 2 * kBlockSize, 0, 0});
  trace::KernelRecord k = kernel(0, 1000, {{0, 0}, {32, 0}});
  k.args = {1};
  w.write(k);
  w.close();
  return path;
}

} // namespace

TEST_CASE("budget mode: the kernel's chunks fit before it starts, oldest others leave first",
          "[sim][budget]") {
  Scratch s;
  // Three one-block kernels on a 2-chunk budget: the third evicts block 0 (the oldest) before
  // it starts, then faults only on its own block.
  const auto trace = write_trace(s, 3,
                                 {kernel(0, 1000, {{0, 0}}), kernel(1000, 1000, {{32, 0}}),
                                  kernel(2000, 1000, {{64, 0}, {32, 0}})});
  nlohmann::json cfg = Scratch::run_config();
  cfg["capacity"] = {{"fraction_of_footprint", 1.0}, {"mode", "budget"}};
  const Outcome o = simulate(cfg, trace, 2);
  CHECK(o.stats.evictions == 1);
  CHECK(o.stats.pages_d2h == kPagesPerBigPage); // block 0's one big page, not block 1's
  CHECK(o.stats.faults == 3);
  CHECK(o.stats.peak_chunks == 2);
  // The eviction (5 us + 1 us + 65536 ns copy) runs before the third kernel starts.
  const KernelRow& third = o.stats.kernel_rows.at(2);
  CHECK(third.start >= o.stats.kernel_rows.at(1).end + 5000 + 1000 + 65536);
  // Its row's launch is before that eviction, where the live replay's row starts.
  CHECK(third.launched >= o.stats.kernel_rows.at(1).end);
  CHECK(third.launched <= third.start - (5000 + 1000 + 65536));
  CHECK(o.stats.kernel_rows.at(0).launched <= o.stats.kernel_rows.at(0).start);
}

TEST_CASE("budget mode: a device allocation into a full budget evicts the oldest chunks",
          "[sim][budget]") {
  Scratch s;
  // Two kernels fill a 2-chunk budget; cuDNN-like device memory of one chunk then arrives (it is
  // never evicted): the oldest managed chunk leaves for it, as the replay's next kernel would
  // make room, and the third kernel's block evicts the other.
  const std::string path = s.file("device.fltrace");
  {
    trace::TraceWriter w(path, {{"source", "test"}});
    w.write(trace::AllocRecord{1, trace::MemoryKind::kManaged, kBase, 3 * kBlockSize, 0, 0});
    w.write(kernel(0, 1000, {{0, 0}}));
    w.write(kernel(1000, 1000, {{32, 0}}));
    w.write(trace::AllocRecord{2, trace::MemoryKind::kDevice, 0x40000000, kBlockSize, 2500, 0});
    w.write(kernel(3000, 1000, {{64, 0}}));
    w.close();
  }
  nlohmann::json cfg = Scratch::run_config();
  cfg["capacity"] = {{"fraction_of_footprint", 1.0}, {"mode", "budget"}};
  const Outcome o = simulate(cfg, path, 2);
  CHECK(o.stats.evictions == 2);
  CHECK(o.stats.peak_chunks <= 2);
  CHECK(o.stats.kernel_rows.size() == 3);
}

TEST_CASE("budget mode runs a kernel that needs more chunks than the budget in parts, as the "
          "replay does",
          "[sim][budget]") {
  Scratch s;
  const auto trace = write_trace(s, 3, {kernel(0, 1000, {{0, 0}, {32, 400}, {64, 800}})});
  nlohmann::json cfg = Scratch::run_config();
  cfg["capacity"] = {{"fraction_of_footprint", 1.0}, {"mode", "budget"}};
  const Outcome o = simulate(cfg, trace, 2);
  // Blocks 0 and 1, then 2 after block 0 left: two parts, one eviction, never over the budget.
  CHECK(o.stats.peak_chunks == 2);
  CHECK(o.stats.evictions == 1);
  CHECK(o.stats.faults == 3);
  REQUIRE(o.stats.kernel_rows.size() == 2);
  CHECK(o.stats.kernel_rows[0].index == o.stats.kernel_rows[1].index);
  CHECK(o.stats.kernel_rows[0].accesses == 2);
  CHECK(o.stats.kernel_rows[1].accesses == 1);
  CHECK(o.stats.compute_ns == 1000); // the parts share the kernel's compute time
  CHECK(o.stats.kernel_rows[1].start >= o.stats.kernel_rows[0].end);
  // The second part is asked for when the first ends; block 0's eviction lies between.
  CHECK(o.stats.kernel_rows[1].launched == o.stats.kernel_rows[0].end);
  CHECK(o.stats.kernel_rows[1].start > o.stats.kernel_rows[1].launched);
}

TEST_CASE("budget mode: prefetches are one call per block on the migration stream, and the "
          "kernel waits for them",
          "[sim][budget]") {
  Scratch s;
  s.write("gpus/simgpu.json",
          Scratch::gpu_profile({{"prefetch_call_ns", 4000}, {"prefetch_populate_ns", 100}}));
  // pump prefetches the kernel's argument (2 unpopulated blocks) at launch.
  const std::string path = one_kernel_naming_two_blocks(s);
  nlohmann::json cfg = Scratch::run_config(nlohmann::json::object(), "pump");
  cfg["capacity"] = {{"fraction_of_footprint", 1.0}, {"mode", "budget"}};
  const Outcome o = simulate(cfg, path, 4);
  CHECK(o.stats.faults == 0);
  // Two calls of 4 us each, each populating 32 big pages at 100 ns: the kernel starts at 14.4 us.
  CHECK(o.stats.kernel_rows.at(0).start == 2 * (4000 + 32 * 100));
  CHECK(o.end == 2 * (4000 + 32 * 100) + 1000);
}

TEST_CASE("budget mode: each kernel pays the replay's launch, whatever the policy",
          "[sim][budget]") {
  Scratch s;
  s.write("gpus/simgpu.json", Scratch::gpu_profile({{"launch_ns", 10000}}));
  const auto trace = write_trace(s, 1, {kernel(0, 1000, {}), kernel(1000, 1000, {})});
  for (const char* policy : {"ondemand", "deepum"}) {
    nlohmann::json cfg = Scratch::run_config(nlohmann::json::object(), policy);
    cfg["capacity"] = {{"fraction_of_footprint", 1.0}, {"mode", "budget"}};
    const Outcome o = simulate(cfg, trace, 1);
    const Time per_kernel = 10000;
    INFO(policy);
    CHECK(o.stats.kernel_rows.at(0).start == per_kernel);
    CHECK(o.stats.kernel_rows.at(1).start == o.stats.kernel_rows.at(0).end + per_kernel);
    cfg["capacity"] = {{"fraction_of_footprint", 1.0}}; // a prediction: the GPU's own rhythm
    CHECK(simulate(cfg, trace, 1).stats.kernel_rows.at(0).start == 0);
  }
}

TEST_CASE("budget mode keeps every invariant and the budget on random traces",
          "[sim][budget][invariants]") {
  Scratch s;
  uint64_t completed = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    for (const char* policy : {"ondemand", "pump", "deepum", "oracle"}) {
      synth::Params p;
      p.footprint = 24 * kBlockSize;
      p.iterations = 2;
      p.layers = 4;
      p.seed = seed;
      const std::string path = s.file("b.fltrace");
      synth::write_trace(p, path, "test");
      const trace::TraceStats ts = trace::compute_stats(path);
      nlohmann::json cfg = Scratch::run_config(nlohmann::json::object(), policy);
      cfg["capacity"] = {{"fraction_of_footprint", 1.0}, {"mode", "budget"}};
      const uint64_t chunks = std::max<uint64_t>(ts.footprint_chunks * (40 + seed * 7) / 100, 8);
      const config::RunConfig config = simtest::parse(cfg);
      Simulator sim(config, path, chunks);
      sim.set_check_invariants(true);
      INFO("seed " << seed << " policy " << policy << " chunks " << chunks);
      // A kernel larger than the budget runs in parts: every run completes.
      const Stats& st = sim.run();
      CHECK(st.peak_chunks <= chunks);
      ++completed;
    }
  }
  CHECK(completed >= 24); // most runs fit: the test is not vacuous
}

TEST_CASE("budget mode: a fault on a page DeepUM discarded costs the profile's discarded cost",
          "[sim][budget]") {
  Scratch s;
  // A real trace with allocator blocks, whose frees DeepUM discards (its pre-eviction's victims).
  const std::string trace = std::string(FAULTLINE_SOURCE_DIR) + "/traces/real/resnet50.fltrace";
  nlohmann::json cfg = Scratch::run_config(nlohmann::json::object(), "deepum");
  cfg["capacity"] = {{"fraction_of_footprint", 0.75}, {"mode", "budget"}};
  const auto run = [&](Time discarded_ns) {
    s.write("gpus/simgpu.json", Scratch::gpu_profile({{"populate_ns", 500},
                                                      {"discarded_resident_fault_ns", discarded_ns},
                                                      {"discarded_fault_ns", discarded_ns}}));
    const uint64_t footprint = trace::compute_stats(trace).footprint_chunks;
    return simulate(cfg, trace, simtest::parse(cfg).capacity.chunks(footprint));
  };
  const Outcome cheap = run(500), dear = run(100'500);
  // The same decisions: costs change times, not which pages are discarded and faulted again.
  CHECK(dear.stats.discarded_pages == cheap.stats.discarded_pages);
  // A discarded page read first pays again at its first write, unless read and written in one
  // batch; times move the batches' edges, so the count may move by a little.
  const uint64_t refaults[2] = {cheap.stats.discarded_refaults +
                                    cheap.stats.discarded_read_refaults,
                                dear.stats.discarded_refaults + dear.stats.discarded_read_refaults};
  CHECK(std::max(refaults[0], refaults[1]) - std::min(refaults[0], refaults[1]) <
        std::min(refaults[0], refaults[1]) / 100);
  // Only writes pay it: the trace's GEMMs read pages DeepUM discarded (their operands, recorded
  // as reads), and those faults cost a first touch however dear the discarded cost. A page read
  // and written in one fault batch counts as written, and times move the batches' edges: the
  // split may move by a little.
  REQUIRE(cheap.stats.discarded_refaults > 1000);
  CHECK(cheap.stats.discarded_read_refaults > 1000);
  const auto written = {cheap.stats.discarded_refaults, dear.stats.discarded_refaults};
  CHECK(std::max(written) - std::min(written) < std::min(written) / 50);
  // Each written one is on the batch's CPU side, serial: 100 us more apiece.
  const Time extra = dear.end - cheap.end;
  CHECK(extra >= static_cast<Time>(std::min(written)) * 100'000 * 9 / 10);
  CHECK(extra <= static_cast<Time>(std::max(written)) * 100'000 * 11 / 10);
}

TEST_CASE("program mode: an eviction over pages a policy discarded puts them on the host",
          "[sim][budget]") {
  Scratch s;
  // DeepUM discards a victim's freed pages and then evicts the whole block: the replay's call
  // leaves the discarded pages out, and a later write pays the discarded cost; the program's
  // call covers them, which populates them on the host, and a later write migrates them.
  const std::string trace = std::string(FAULTLINE_SOURCE_DIR) + "/traces/real/resnet50.fltrace";
  s.write("gpus/simgpu.json", Scratch::gpu_profile({{"populate_ns", 500},
                                                    {"discarded_resident_fault_ns", 100'500},
                                                    {"discarded_fault_ns", 100'500}}));
  const auto run = [&](const char* mode) {
    nlohmann::json cfg = Scratch::run_config(nlohmann::json::object(), "deepum");
    cfg["capacity"] = {{"fraction_of_footprint", 0.75}, {"mode", mode}};
    const uint64_t footprint = trace::compute_stats(trace).footprint_chunks;
    return simulate(cfg, trace, simtest::parse(cfg).capacity.chunks(footprint));
  };
  const Outcome replay = run("budget"), program = run("program");
  REQUIRE(replay.stats.discarded_refaults > 1000);
  CHECK(program.stats.discarded_refaults < replay.stats.discarded_refaults / 4);
  CHECK(program.stats.pages_populated_on_host > replay.stats.pages_populated_on_host);
}

TEST_CASE("program mode: an eviction call over discarded pages costs eviction_discarded_ns, "
          "over never-touched ones eviction_populate_ns",
          "[sim][budget]") {
  Scratch s;
  const std::string trace = std::string(FAULTLINE_SOURCE_DIR) + "/traces/real/resnet50.fltrace";
  const auto run = [&](nlohmann::json costs) {
    costs["populate_ns"] = 500;
    costs["eviction_populate_ns"] = 300'000;
    s.write("gpus/simgpu.json", Scratch::gpu_profile(costs));
    nlohmann::json cfg = Scratch::run_config(nlohmann::json::object(), "deepum");
    cfg["capacity"] = {{"fraction_of_footprint", 0.75}, {"mode", "program"}};
    const uint64_t footprint = trace::compute_stats(trace).footprint_chunks;
    return simulate(cfg, trace, simtest::parse(cfg).capacity.chunks(footprint));
  };
  const Outcome absent = run(nlohmann::json::object()),
                same = run({{"eviction_discarded_ns", 300'000}}),
                free = run({{"eviction_discarded_ns", 0}}),
                dear = run({{"eviction_discarded_ns", 700'000}});
  // Absent, it is eviction_populate_ns, as before the benchmark measured it.
  CHECK(absent.end == same.end);
  CHECK(absent.stats.migration_ns == same.stats.migration_ns);
  // The price changes times, not what moves.
  CHECK(free.stats.pages_populated_on_host == dear.stats.pages_populated_on_host);
  CHECK(free.stats.evictions == dear.stats.evictions);
  REQUIRE(free.stats.pages_populated_on_host > 0);
  // Each call over discarded pages only is one 700 us more on the serial migration stream.
  const Time extra = dear.stats.migration_ns - free.stats.migration_ns;
  CHECK(extra > 0);
  CHECK(extra % 700'000 == 0);
  CHECK(dear.end > free.end);
}

TEST_CASE("budget mode: a prefetch of pages a policy discarded costs the profile's discarded "
          "prefetch cost",
          "[sim][budget]") {
  Scratch s;
  const std::string trace = std::string(FAULTLINE_SOURCE_DIR) + "/traces/real/resnet50.fltrace";
  const auto run = [&](const char* policy, Time discarded_ns) {
    nlohmann::json cfg = Scratch::run_config(nlohmann::json::object(), policy);
    cfg["capacity"] = {{"fraction_of_footprint", 0.75}, {"mode", "budget"}};
    cfg["iterations"] = 2;
    s.write("gpus/simgpu.json", Scratch::gpu_profile({{"prefetch_populate_ns", 500},
                                                      {"discarded_prefetch_ns", discarded_ns}}));
    const uint64_t footprint = trace::compute_stats(trace).footprint_chunks;
    return simulate(cfg, trace, simtest::parse(cfg).capacity.chunks(footprint), false);
  };
  // schedule discards the pages of freed allocator blocks and prefetches the blocks again
  // before their next use: each such page costs the discarded price, not a populate.
  const Outcome cheap = run("schedule", 500), dear = run("schedule", 50'500);
  REQUIRE(cheap.stats.discarded_pages > 1000);
  CHECK(dear.stats.discarded_pages == cheap.stats.discarded_pages);
  CHECK(dear.end > cheap.end + 1000 * 50'000 / 10);
  // A policy that never discards pays nothing for it.
  CHECK(run("pump", 500).end == run("pump", 50'500).end);
}

TEST_CASE("budget mode: a prefetch right after an eviction costs the profile's swap extra",
          "[sim][budget]") {
  Scratch s;
  synth::Params p;
  p.footprint = 48 * kBlockSize;
  p.iterations = 2;
  p.layers = 6;
  p.seed = 3;
  const std::string trace = s.file("swap.fltrace");
  synth::write_trace(p, trace, "test");
  const uint64_t chunks = trace::compute_stats(trace).footprint_chunks / 2;
  const auto run = [&](const char* policy, Time swap_ns) {
    s.write("gpus/simgpu.json", Scratch::gpu_profile({{"swap_extra_ns", swap_ns}}));
    nlohmann::json cfg = Scratch::run_config(nlohmann::json::object(), policy);
    cfg["capacity"] = {{"fraction_of_footprint", 0.5}, {"mode", "budget"}};
    return simulate(cfg, trace, chunks);
  };
  for (const char* policy : {"pump", "oracle"}) {
    INFO(policy);
    const Outcome apart = run(policy, 0), in_turn = run(policy, 100'000);
    // Costs move times, not choices: the same pages go back to the host.
    REQUIRE(in_turn.stats.pages_d2h == apart.stats.pages_d2h);
    REQUIRE(apart.stats.pages_d2h > 10 * kPagesPerBlock);
    // Each eviction made to prefetch a block adds 100 us on the stream, serial; those made before
    // a kernel (the budget's own) add nothing. Every eviction moves a page at least.
    const Time extra = in_turn.end - apart.end;
    CHECK(extra >= 100'000);
    CHECK(extra <= static_cast<Time>(apart.stats.pages_d2h) * 100'000);
  }
  // Ondemand prefetches nothing: the extra never applies.
  CHECK(run("ondemand", 100'000).end == run("ondemand", 0).end);
}

TEST_CASE("program mode: as faultline run keeps the budget, no replay launch and no wait but "
          "for an eviction",
          "[sim][budget]") {
  Scratch s;
  s.write("gpus/simgpu.json",
          Scratch::gpu_profile({{"launch_ns", 10000}, {"prefetch_call_ns", 4000}}));
  const auto trace = write_trace(s, 1, {kernel(0, 1000, {}), kernel(1000, 1000, {})});
  nlohmann::json cfg = Scratch::run_config();
  cfg["capacity"] = {{"fraction_of_footprint", 1.0}, {"mode", "program"}};
  const Outcome o = simulate(cfg, trace, 1);
  CHECK(o.stats.kernel_rows.at(0).start == 0); // the program's launch is in its own timeline
  CHECK(o.stats.kernel_rows.at(1).start == 1000);

  // pump prefetches the kernel's two blocks: the kernel starts at its launch, beside them.
  const std::string path = one_kernel_naming_two_blocks(s);
  nlohmann::json pump = Scratch::run_config(nlohmann::json::object(), "pump");
  pump["capacity"] = {{"fraction_of_footprint", 1.0}, {"mode", "program"}};
  const Outcome p = simulate(pump, path, 4);
  CHECK(p.stats.kernel_rows.at(0).start == 0);
  pump["capacity"]["mode"] = "budget"; // the replay's kernel waits for both calls
  CHECK(simulate(pump, path, 4).stats.kernel_rows.at(0).start >= 2 * 4000);

  // Three one-block kernels on a 2-chunk budget: the third waits for its eviction, as the run's
  // launch stream waits for the migration stream once the budget evicted for it.
  const auto three = write_trace(s, 3,
                                 {kernel(0, 1000, {{0, 0}}), kernel(1000, 1000, {{32, 0}}),
                                  kernel(2000, 1000, {{64, 0}, {32, 0}})});
  const Outcome e = simulate(cfg, three, 2);
  CHECK(e.stats.evictions == 1);
  CHECK(e.stats.kernel_rows.at(2).start >= e.stats.kernel_rows.at(1).end + 5000 + 1000 + 65536);
  CHECK(e.stats.kernel_rows.at(1).start == e.stats.kernel_rows.at(0).end); // no wait before
}

TEST_CASE("results say what kernels waited for: evictions, copies in flight, the migration "
          "stream, and the host link each way",
          "[sim][budget]") {
  Scratch s;
  const std::string trace = std::string(FAULTLINE_SOURCE_DIR) + "/traces/real/resnet50.fltrace";
  const uint64_t footprint = trace::compute_stats(trace).footprint_chunks;
  const auto run = [&](const char* policy, const char* mode) {
    nlohmann::json cfg = Scratch::run_config(nlohmann::json::object(), policy);
    cfg["capacity"] = {{"fraction_of_footprint", 0.5}, {"mode", mode}};
    cfg["iterations"] = 2;
    return simulate(cfg, trace, simtest::parse(cfg).capacity.chunks(footprint), false);
  };
  const Outcome driver = run("ondemand", "driver"), budget = run("pump", "budget");
  for (const Outcome* o : {&driver, &budget}) {
    const Stats& st = o->stats;
    CHECK(st.eviction_wait_ns > 0);
    CHECK(st.link_to_gpu_busy_ns > 0);
    CHECK(st.link_to_host_busy_ns > 0);
    CHECK(st.link_both_busy_ns <= std::min(st.link_to_gpu_busy_ns, st.link_to_host_busy_ns));
    CHECK(st.link_to_gpu_busy_ns <= o->end);
  }
  // The driver evicts inside fault batches, on their CPU side: no more than the batches took.
  CHECK(driver.stats.eviction_wait_ns <= driver.stats.batch_ns);
  CHECK(driver.stats.stream_wait_ns == 0);
  // pump's prefetches queue on the migration stream ahead of the kernels that wait for them.
  CHECK(budget.stats.stream_wait_ns > 0);
  CHECK(budget.stats.stream_wait_ns + budget.stats.eviction_wait_ns <= budget.end);
  // In driver mode pump's prefetches run beside the faults: some fault lands on a page whose
  // prefetch is still on the link and waits for it, beyond its batch's own work.
  const Outcome beside = run("pump", "driver");
  CHECK(beside.stats.prefetch_wait_ns > 0);
  CHECK(beside.stats.prefetch_wait_ns <= beside.stats.batch_ns);
}
