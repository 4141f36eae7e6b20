// The policy host inside a program (sim/program): the program's calls in, the policy's actions and
// the budget's evictions out, on a fake device; the module's seam as the injection library loads
// it; the run's config read strictly.
#include "policies/registry.h"
#include "replay_support.h"
#include "sim/core/error.h"
#include "sim/program/address_map.h"
#include "sim/program/command.h"
#include "sim/program/config.h"
#include "sim/program/program.h"
#include "sim/program/seam.h"
#include "sim/program/trace_calls.h"
#include "sim/run/result_fields.h"
#include "sim/trace/inspect.h"
#include "sim/trace/writer.h"
#include "tracer/raw/raw_format.h"

#include <catch2/catch.hpp>
#include <dlfcn.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace faultline;

namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kBase = 0x7f0000000000ull; // 2 MB aligned, as managed allocations are

// Records every call, as "kind address bytes".
class FakeDevice : public program::Device {
public:
  std::vector<std::string> calls;
  std::vector<uint64_t> addresses; // of every migration, discard and advice
  uint64_t used = 1ull << 30, total = 80ull << 30, migration_ns = 0;

  void prefetch_to_gpu(uint64_t a, uint64_t n) override { note("prefetch", a, n); }
  void evict_to_host(uint64_t a, uint64_t n) override { note("evict", a, n); }
  void discard(uint64_t a, uint64_t n) override { note("discard", a, n); }
  void advise_remote(uint64_t a, uint64_t n, bool on) override {
    note(on ? "advise" : "unadvise", a, n);
  }
  void order_before(uint64_t stream) override {
    calls.push_back("order " + std::to_string(stream));
  }
  void order_after_launched() override { calls.push_back("after"); }
  void synchronize() override { calls.push_back("sync"); }
  uint64_t migration_gpu_ns() override { return migration_ns; }
  uint64_t used_bytes() override { return used; }
  uint64_t total_bytes() override { return total; }
  const char* error() override { return ""; }

  std::vector<std::string> take() { return std::exchange(calls, {}); }

private:
  void note(const char* kind, uint64_t a, uint64_t n) {
    addresses.push_back(a);
    calls.push_back(std::string(kind) + " " + std::to_string((a - kBase) / kMiB) + "M " +
                    std::to_string(n / kMiB) + "M");
  }
};

class ManualClock : public program::RunClock {
public:
  Time t = 0;
  Time now() const override { return t; }
};

// At its second launch, evicts 1 MiB + 100 bytes from the start of what the first named.
class EvictSome : public policies::IPolicy {
public:
  EvictSome(const nlohmann::json&, const std::string&) {}
  void on_kernel_launch(const policies::LaunchEvent& e, policies::Actions& out) override {
    if (e.kernel == 0 && !e.args.empty()) start_ = e.args[0].start;
    if (e.kernel == 1)
      out.push_back({policies::ActionKind::kEvict, {start_, kMiB + 100}, kHost, {}});
  }

private:
  Addr start_ = 0;
};
FAULTLINE_REGISTER_POLICY(EvictSome, "test-evict-some");

// At kernel 1's launch evicts what kernel 0 named; at kernel 1's end, what kernel 1 named.
class EvictAtEnd : public policies::IPolicy {
public:
  EvictAtEnd(const nlohmann::json&, const std::string&) {}
  void on_kernel_launch(const policies::LaunchEvent& e, policies::Actions& out) override {
    named_.push_back(e.args.at(0));
    if (e.kernel == 1) out.push_back({policies::ActionKind::kEvict, named_[0], kHost, {}});
  }
  void on_kernel_end(const policies::KernelEndEvent& e, policies::Actions& out) override {
    if (e.kernel == 1) out.push_back({policies::ActionKind::kEvict, named_[1], kHost, {}});
  }

private:
  std::vector<policies::Range> named_;
};
FAULTLINE_REGISTER_POLICY(EvictAtEnd, "test-evict-at-end");

program::RunConfig run_config(const std::string& policy, uint64_t budget,
                              const std::string& kernel_ends = "launch") {
  program::RunConfig c;
  c.policy = policy;
  c.budget_bytes = budget;
  c.kernel_ends = kernel_ends;
  c.out = "unused";
  return c;
}

} // namespace

TEST_CASE("program run: a launch's named allocations fit the budget, the oldest go first") {
  FakeDevice device;
  ManualClock clock;
  program::ProgramRun run(run_config("ondemand", 8 * kMiB), device, device.total, clock);
  run.alloc(kBase, 4 * kMiB, true);            // A: chunks 0-1
  run.alloc(kBase + 4 * kMiB, 4 * kMiB, true); // B: chunks 2-3
  run.alloc(kBase + 8 * kMiB, 4 * kMiB, true); // C: chunks 4-5
  clock.t = 10;
  run.launch("k0", {kBase + 16, kBase + 4 * kMiB}, 7); // A and B: 4 chunks, the whole budget
  CHECK(device.take().empty());                        // room enough: nothing moves, no wait
  CHECK(run.residency().resident_chunks() == 4);
  run.launch("k1", {kBase + 8 * kMiB + 100}, 9); // C: A's two chunks go, then the stream waits
  CHECK(device.take() ==
        std::vector<std::string>{"after", "evict 0M 2M", "evict 2M 2M", "order 9"});
  CHECK(run.residency().resident_chunks() == 4);
  CHECK(run.residency().peak_chunks() == 4);
  run.launch("k2", {kBase + 8 * kMiB}, 9); // C again: resident, nothing moves
  CHECK(device.take().empty());
  run.kernels_done(3);
  const nlohmann::json doc = run.finish();
  CHECK(doc["results"]["kernels"] == 3);
  CHECK(doc["results"]["evictions"] == 2);
  CHECK(doc["results"]["bytes_gpu_to_host"] == 4 * kMiB);
  CHECK(doc["results"]["faults"] == 4 * 32 + 2 * 32); // k0's four chunks, k1's two
  CHECK(doc["config"]["budget_chunks"] == 4);
}

TEST_CASE("program run: the policy's start is counted apart from its decisions at launches") {
  // Each reading of this clock is 1 us later: every policy call takes 1 us.
  class TickingClock : public program::RunClock {
  public:
    mutable Time t = 0;
    Time now() const override { return t += 1000; }
  } clock;
  FakeDevice device;
  program::ProgramRun run(run_config("ondemand", 0), device, device.total, clock);
  run.alloc(kBase, 4 * kMiB, true);
  run.launch("k0", {kBase}, 0);
  run.kernels_done(1);
  const nlohmann::json doc = run.finish();
  CHECK(doc["results"]["policy_start_ns"] == 1000);
  // The allocation, the launch and the kernel's end: a decision each, the start not among them.
  CHECK(doc["results"]["policy_decision_ns"] == 3000);
}

TEST_CASE("program run: a kernel naming more than the budget stops with its name") {
  FakeDevice device;
  ManualClock clock;
  program::ProgramRun run(run_config("ondemand", 4 * kMiB), device, device.total, clock);
  run.alloc(kBase, 6 * kMiB, true);
  CHECK_THROWS_WITH(run.launch("big_gemm", {kBase}, 0),
                    Catch::Contains("the launch needs 3 chunks of 2 MB at once"));
}

// Three 2 MB allocations under pump at a budget of two, and kernel a naming the first two, which
// pump prefetches.
static void pump_launches_a(program::ProgramRun& run, FakeDevice& device) {
  run.alloc(kBase, 2 * kMiB, true);
  run.alloc(kBase + 2 * kMiB, 2 * kMiB, true);
  run.alloc(kBase + 4 * kMiB, 2 * kMiB, true);
  run.launch("a", {kBase, kBase + 2 * kMiB}, 0);
  CHECK(device.take() == std::vector<std::string>{"prefetch 0M 2M", "prefetch 2M 2M"});
}

TEST_CASE("program run: pump's prefetches run on the migration stream within the budget") {
  FakeDevice device;
  ManualClock clock;
  // Kernel ends as the GPU reports them: a is still running at b's launch.
  program::ProgramRun run(run_config("pump", 4 * kMiB, "gpu"), device, device.total, clock);
  pump_launches_a(run, device);
  // b's block would pass PUMP's share of the budget while a runs: its prefetch waits for a's end;
  // the budget makes room for b at once, and b's stream waits for that eviction.
  run.launch("b", {kBase + 4 * kMiB}, 0);
  CHECK(device.take() == std::vector<std::string>{"after", "evict 0M 2M", "order 0"});
  // At a's end PUMP prefetches b's block, which b's launch brought into the books already (its
  // kernel faults it in): nothing moves, so no call is made and no byte counted.
  run.kernels_done(1);
  CHECK(device.take().empty());
  run.kernels_done(2);
  const nlohmann::json doc = run.finish();
  CHECK(doc["results"]["prefetch"]["issued_bytes"] == 4 * kMiB);
  CHECK(doc["results"]["faults"] == 32); // b's block was not there at its launch
}

TEST_CASE("program run: a kernel's end reaches the policy at the next call, where actions land") {
  FakeDevice device;
  ManualClock clock;
  program::ProgramRun run(run_config("pump", 4 * kMiB), device, device.total, clock);
  pump_launches_a(run, device);
  // a ended for the policy at b's call: PUMP prefetches b's block at b's launch, after a's
  // kernel (the eviction waits for it), and b finds it there.
  run.launch("b", {kBase + 4 * kMiB}, 0);
  CHECK(device.take() ==
        std::vector<std::string>{"after", "evict 0M 2M", "prefetch 4M 2M", "order 0"});
  run.kernels_done(2); // the GPU's report changes nothing now
  CHECK(device.take().empty());
  const nlohmann::json doc = run.finish();
  CHECK(doc["results"]["prefetch"]["issued_bytes"] == 6 * kMiB);
  CHECK(doc["results"]["faults"] == 0);
}

TEST_CASE("program run: after an eviction every stream's next launch waits, once") {
  FakeDevice device;
  ManualClock clock;
  program::ProgramRun run(run_config("ondemand", 4 * kMiB), device, device.total, clock);
  run.alloc(kBase, 4 * kMiB, true);
  run.alloc(kBase + 4 * kMiB, 4 * kMiB, true);
  run.launch("k0", {kBase}, 3);
  CHECK(device.take().empty());
  run.launch("k1", {kBase + 4 * kMiB}, 3); // the budget evicts k0's chunks; stream 3 waits
  CHECK(device.take() ==
        std::vector<std::string>{"after", "evict 0M 2M", "evict 2M 2M", "order 3"});
  run.launch("k2", {kBase + 4 * kMiB}, 5); // nothing moves, but stream 5 never waited for them
  CHECK(device.take() == std::vector<std::string>{"order 5"});
  run.launch("k3", {kBase + 4 * kMiB}, 3); // stream 3 has
  run.launch("k4", {kBase + 4 * kMiB}, 5);
  CHECK(device.take().empty());
}

TEST_CASE("program run: what the policy does at a kernel's end waits for that kernel") {
  FakeDevice device;
  ManualClock clock;
  program::ProgramRun run(run_config("test-evict-at-end", 0), device, device.total, clock);
  run.alloc(kBase, 2 * kMiB, true);
  run.alloc(kBase + 2 * kMiB, 2 * kMiB, true);
  run.launch("k0", {kBase}, 3);
  CHECK(device.take().empty());
  // Inside k1's launch the migration stream waits for k0 (k1 is not on its stream yet), and k1
  // waits for the eviction.
  run.launch("k1", {kBase + 2 * kMiB}, 3);
  CHECK(device.take() == std::vector<std::string>{"after", "evict 0M 2M", "order 3"});
  // k1's end reaches the policy at the next call: its eviction waits for k1, launched since.
  run.synced();
  CHECK(device.take() == std::vector<std::string>{"after", "evict 2M 2M"});
}

TEST_CASE("program run: with ends at the launch, how far the CPU runs ahead changes nothing") {
  fltest::TempDir dir;
  const std::string trace = fltest::dnn_trace(dir, 11);
  const uint64_t footprint = trace::compute_stats(trace).footprint_bytes();
  const auto run_with = [&](const std::string& policy, const std::string& ends, uint64_t behind) {
    FakeDevice device;
    ManualClock clock; // fixed: schedule's step-time guard reads it
    program::RunConfig c = run_config(policy, footprint / 2, ends);
    c.trace = trace;
    program::ProgramRun run(c, device, device.total, clock);
    program::feed(program::trace_calls(trace), run, behind);
    return run.finish()["results"];
  };
  for (const char* policy : {"schedule", "oracle", "pump", "deepum"}) {
    INFO(policy);
    const nlohmann::json at_once = run_with(policy, "launch", 0);
    CHECK(run_with(policy, "launch", 40) == at_once);
    CHECK(run_with(policy, "gpu", 0) == at_once);
  }
  // Heard from the GPU, 40 kernels late, the planners' prefetches come after the launches
  // they were for, and the books count those kernels' pages as faults.
  for (const char* policy : {"schedule", "oracle"}) {
    INFO(policy);
    CHECK(run_with(policy, "gpu", 40)["faults"].get<int64_t>() >
          run_with(policy, "launch", 0)["faults"].get<int64_t>());
  }
}

TEST_CASE("program run: steps begin at a mark that a kernel follows; rows add up") {
  FakeDevice device;
  ManualClock clock;
  program::ProgramRun run(run_config("ondemand", 0), device, device.total, clock);
  run.alloc(kBase, 2 * kMiB, true);
  clock.t = 100;
  run.launch("fwd", {kBase}, 0); // the set-up, step -1, opens at the start
  clock.t = 200;
  run.step();
  clock.t = 250;
  run.step(); // a second mark with no kernel between: the step begins here
  clock.t = 300;
  device.migration_ns = 70; // the set-up's migrations, done on the GPU
  run.launch("fwd", {kBase}, 0);
  run.discard({kBase, kMiB}, 300);       // as a policy's action: the step's discards
  device.used = (1ull << 30) + 2 * kMiB; // the GPU counts the chunk resident
  run.synced();
  clock.t = 400;
  device.migration_ns = 100;
  run.step();
  clock.t = 450; // a mark with nothing after it: the last step runs to the last call
  run.kernels_done(2);
  device.migration_ns = 130;
  const nlohmann::json doc = run.finish();
  REQUIRE(doc["steps"].size() == 2);
  for (const auto& [key, value] : doc["results"].items()) { // every field it writes is declared
    const std::string path = "results." + key;
    INFO(path);
    CHECK((result_field_declared(path) ||
           (value.is_object() && result_field_declared(path + "." + value.begin().key()))));
  }
  for (const auto& [key, value] : doc["steps"][1].items()) {
    INFO(key);
    CHECK(result_field_declared("steps[]." + key));
  }
  CHECK(doc["steps"][0]["step"] == -1); // as the capture numbers what runs before a mark
  CHECK(doc["steps"][0]["start_ns"] == 0);
  CHECK(doc["steps"][1]["step"] == 0);
  CHECK(doc["steps"][0]["end_ns"] == 250);
  CHECK(doc["steps"][1]["start_ns"] == 250);
  CHECK(doc["steps"][1]["end_ns"] == 400);
  CHECK(doc["steps"][1]["kernels"] == 1);
  CHECK(doc["steps"][1]["peak_resident_bytes"] == 2 * kMiB);
  CHECK(doc["steps"][1]["gpu_used_peak_bytes"] == 2 * kMiB);
  CHECK(doc["steps"][1]["faults"] == 0);
  CHECK(doc["steps"][0]["discarded_bytes"] == 0);
  CHECK(doc["steps"][1]["discarded_bytes"] == kMiB);
  CHECK(doc["results"]["discarded_bytes"] == kMiB);
  CHECK(doc["steps"][0]["faults"] == 32);
  // What the device measured, step by step as each closed, and over the run.
  CHECK(doc["steps"][0]["migration_gpu_ns"] == 70);
  CHECK(doc["steps"][1]["migration_gpu_ns"] == 60);
  CHECK(doc["results"]["migration_gpu_ns"] == 130);
}

TEST_CASE("program run: a copy never begins a step; before a kernel it is the new step's") {
  FakeDevice device;
  ManualClock clock;
  program::ProgramRun run(run_config("ondemand", 0), device, device.total, clock);
  run.alloc(kBase, 2 * kMiB, true);
  clock.t = 100;
  run.launch("fwd", {kBase}, 0);
  clock.t = 200;
  run.step();
  clock.t = 220;
  run.launch(raw::copy_name(false, 1), {kBase, 0}, 0); // data in for the next step
  clock.t = 300;
  run.launch("fwd", {kBase}, 0); // confirms the boundary at 200
  clock.t = 400;
  run.step();
  clock.t = 420;
  run.launch(raw::copy_name(false, 2), {0, kBase}, 0); // the final loss.item(): no step follows
  run.kernels_done(4);
  const nlohmann::json doc = run.finish();
  REQUIRE(doc["steps"].size() == 2);
  CHECK(doc["steps"][0]["end_ns"] == 200);
  CHECK(doc["steps"][0]["kernels"] == 1);
  CHECK(doc["steps"][1]["start_ns"] == 200);
  CHECK(doc["steps"][1]["end_ns"] == 420);
  CHECK(doc["steps"][1]["kernels"] == 3);
  CHECK(doc["results"]["kernels"] == 4);
}

TEST_CASE("program run: with the profiler range, the set-up is step -1 and each start a step") {
  FakeDevice device;
  ManualClock clock;
  program::RunConfig c = run_config("ondemand", 0);
  c.range = "profiler";
  program::ProgramRun run(c, device, device.total, clock);
  run.alloc(kBase, 2 * kMiB, true);
  clock.t = 10;
  run.launch("warmup", {kBase}, 0);
  run.step(); // a warm-up optimizer step: outside the range, no boundary
  clock.t = 20;
  run.launch("warmup", {kBase}, 0);
  clock.t = 30;
  run.range(true);
  run.launch("step", {kBase}, 0);
  clock.t = 40;
  run.step(); // the hook's mark after the optimizer step
  clock.t = 45;
  run.range(true); // the next step's start, with no kernel between: one boundary
  clock.t = 50;
  run.launch("step", {kBase}, 0);
  clock.t = 60;
  run.range(false);
  const nlohmann::json doc = run.finish();
  REQUIRE(doc["steps"].size() == 3);
  CHECK(doc["steps"][0]["step"] == -1);
  CHECK(doc["steps"][0]["kernels"] == 2);
  CHECK(doc["steps"][1]["step"] == 0);
  CHECK(doc["steps"][1]["start_ns"] == 30);
  CHECK(doc["steps"][1]["end_ns"] == 45);
  CHECK(doc["steps"][2]["step"] == 1);
  CHECK(doc["steps"][2]["end_ns"] == 60);
}

TEST_CASE("program run: frees leave the books, device memory takes budget") {
  FakeDevice device;
  ManualClock clock;
  program::ProgramRun run(run_config("ondemand", 6 * kMiB), device, device.total, clock);
  run.alloc(kBase, 2 * kMiB, false); // device memory: one chunk of the budget
  run.alloc(kBase + 2 * kMiB, 4 * kMiB, true);
  run.launch("k", {kBase + 2 * kMiB, kBase}, 0);
  CHECK(run.residency().resident_chunks() == 2);
  run.free(kBase + 2 * kMiB);
  CHECK(run.residency().resident_chunks() == 0);
  run.alloc(kBase + 8 * kMiB, 6 * kMiB, true);
  CHECK_THROWS_WITH(run.launch("k", {kBase + 8 * kMiB}, 0), Catch::Contains("the launch needs"));
  run.free(0x1234); // not the run's: ignored, as allocations made before it began
}

TEST_CASE("program run: the budget holds under random launches, frees and policies") {
  for (const char* policy : {"ondemand", "pump", "deepum", "schedule"}) {
    FakeDevice device;
    ManualClock clock;
    const uint64_t budget = 16 * kMiB;
    program::ProgramRun run(run_config(policy, budget), device, device.total, clock);
    uint64_t seed = 12345;
    auto next = [&seed] { return seed = seed * 6364136223846793005ull + 1442695040888963407ull; };
    std::vector<uint64_t> live;
    for (int i = 0; i < 400; ++i) {
      clock.t += 1000;
      const uint64_t r = next() >> 33;
      if (live.size() < 3 || r % 5 == 0) {
        const uint64_t a = kBase + static_cast<uint64_t>(i) * 8 * kMiB;
        run.alloc(a, (1 + r % 3) * 2 * kMiB, true);
        live.push_back(a);
      } else if (r % 7 == 0 && live.size() > 3) {
        run.free(live[r % live.size()]);
        live.erase(live.begin() + static_cast<long>(r % live.size()));
      } else {
        run.launch("k" + std::to_string(r % 4),
                   {live[r % live.size()], live[(r / 7) % live.size()]}, 0);
        if (r % 3 == 0) run.kernels_done(run.kernels());
        if (r % 11 == 0) run.step();
      }
      INFO(policy << " after call " << i);
      REQUIRE(run.residency().resident_chunks() <= budget / (2 * kMiB));
    }
    run.kernels_done(run.kernels());
    const nlohmann::json doc = run.finish();
    CHECK(doc["results"]["kernels"].get<int>() > 100);
    // The steps' discards and evictions add up to the run's (what runs before a mark included).
    int64_t discarded = 0, evicted = 0;
    for (const nlohmann::json& step : doc["steps"]) {
      discarded += step["discarded_bytes"].get<int64_t>();
      evicted += step["bytes_gpu_to_host"].get<int64_t>();
    }
    CHECK(discarded == doc["results"]["discarded_bytes"].get<int64_t>());
    CHECK(evicted == doc["results"]["bytes_gpu_to_host"].get<int64_t>());
    CHECK(evicted > 0);
  }
}

TEST_CASE("program run: with a trace, the policy's addresses are the trace's") {
  program::AddressMap map(
      program::AddressMap::Segments{{{0x1000000, 4 * kMiB}, true}, {{0x9000000, 2 * kMiB}, false}});
  CHECK(map.allocated(kBase, 4 * kMiB, true) == 0x1000000);
  CHECK(map.to_trace(kBase + 5) == 0x1000005);
  std::vector<std::pair<Addr, Bytes>> live;
  map.for_each_live(0x1000000 + kMiB, 8 * kMiB, [&](Addr a, Bytes n, Addr trace) {
    CHECK(trace == 0x1000000 + kMiB);
    live.emplace_back(a, n);
  });
  CHECK(live == std::vector<std::pair<Addr, Bytes>>{{kBase + kMiB, 3 * kMiB}});
  CHECK_THROWS_WITH(map.allocated(kBase + 8 * kMiB, 2 * kMiB, true),
                    Catch::Contains("allocation #1 is 2097152 managed bytes, the trace's 2097152 "
                                    "device bytes"));
  map.freed(kBase);
  CHECK(map.to_trace(kBase) == program::AddressMap::kNoAddress);
  program::AddressMap two(program::AddressMap::Segments{{{0x1000000, 2 * kMiB}, true}});
  two.allocated(kBase, 2 * kMiB, true);
  CHECK(two.allocated(kBase + 2 * kMiB, 2 * kMiB, true) == program::AddressMap::kNoAddress);
  CHECK(two.beyond_trace() == 1);
}

TEST_CASE("program run: with a trace, the budget counts the pages each operation touches") {
  fltest::TempDir dir;
  const std::string trace = fltest::dnn_trace(dir, 7);
  const uint64_t footprint = trace::compute_stats(trace).footprint_bytes();
  for (const char* policy : {"ondemand", "oracle", "schedule", "pump", "deepum"}) {
    FakeDevice device;
    ManualClock clock;
    program::RunConfig c = run_config(policy, footprint / 2);
    c.trace = trace;
    program::ProgramRun run(c, device, device.total, clock);
    // The run's addresses are not the trace's: 1 TiB above, as another process would have them.
    const auto calls = program::trace_calls(trace, 1ull << 40);
    for (size_t i = 0; i < calls.size(); ++i) {
      program::feed({calls[i]}, run);
      INFO(policy << " after call " << i);
      REQUIRE(run.residency().resident_chunks() <= footprint / 2 / (2 * kMiB));
    }
    const nlohmann::json doc = run.finish();
    CHECK(doc["config"]["books"] == "trace");
    CHECK(doc["steps"].size() == 2);
    CHECK(doc["results"]["bytes_host_to_gpu"].get<int64_t>() > 0); // by fault or prefetch
    if (std::string(policy) == "ondemand") CHECK(doc["results"]["faults"].get<int64_t>() > 0);
    for (uint64_t a : device.addresses) CHECK(a >= (1ull << 40)); // in the run's memory
  }
}

TEST_CASE("program run: a launch the trace does not have at its number stops the run there") {
  fltest::TempDir dir;
  const std::string trace = fltest::dnn_trace(dir, 7);
  const auto run_with = [&](const std::vector<program::TraceCall>& calls) {
    FakeDevice device;
    ManualClock clock;
    program::RunConfig c = run_config("schedule", 0);
    c.trace = trace;
    program::ProgramRun run(c, device, device.total, clock);
    program::feed(calls, run);
    return run.kernels();
  };
  const std::vector<program::TraceCall> calls = program::trace_calls(trace);
  const uint64_t operations = run_with(calls); // the trace's own calls run through
  REQUIRE(operations > 3);
  // Another kernel at operation #2: its picture of the program would be the trace's, stale.
  std::vector<program::TraceCall> other = calls;
  size_t launches = 0;
  for (program::TraceCall& c : other)
    if (c.kind == program::TraceCall::kLaunch && launches++ == 2) c.name = "another_kernel";
  CHECK_THROWS_WITH(run_with(other), Catch::Contains("the trace's operation #2 is ") &&
                                         Catch::Contains("not of this program as it runs"));
  // A program that runs longer than its trace (more steps than were captured).
  std::vector<program::TraceCall> longer = calls;
  longer.push_back({program::TraceCall::kLaunch, 0, 0, true, "one_more", {}});
  CHECK_THROWS_WITH(run_with(longer),
                    Catch::Contains("the trace has " + std::to_string(operations) + " operations"));
}

TEST_CASE("program run: a trace of another program is refused at the allocation that differs") {
  fltest::TempDir dir;
  const std::string trace = fltest::dnn_trace(dir, 7);
  FakeDevice device;
  ManualClock clock;
  program::RunConfig c = run_config("ondemand", 0);
  c.trace = trace;
  program::ProgramRun run(c, device, device.total, clock);
  CHECK_THROWS_WITH(run.alloc(kBase, 12345, true),
                    Catch::Contains("the run's allocation #0 is 12345 managed bytes"));
}

TEST_CASE("program run config: read strictly, every bad key named") {
  const nlohmann::json good = {{"policy", "pump"}, {"budget_bytes", 1024}, {"out", "m.json"}};
  CHECK(program::run_config_of(good, "c.json").policy == "pump");
  nlohmann::json bad = good;
  bad["policy"] = "nosuch";
  CHECK_THROWS_WITH(program::run_config_of(bad, "c.json"),
                    Catch::Contains("c.json: $.policy: unknown policy \"nosuch\""));
  bad = good;
  bad["budget"] = 3;
  CHECK_THROWS_WITH(program::run_config_of(bad, "c.json"), Catch::Contains("budget"));
  bad = good;
  bad["budget_bytes"] = "1G";
  CHECK_THROWS_WITH(program::run_config_of(bad, "c.json"), Catch::Contains("$.budget_bytes"));
  bad = good;
  bad.erase("out");
  CHECK_THROWS_WITH(program::run_config_of(bad, "c.json"), Catch::Contains("$.out"));
  CHECK(program::run_config_of(good, "c.json").kernel_ends == "launch");
  bad = good;
  bad["kernel_ends"] = "cpu";
  CHECK_THROWS_WITH(program::run_config_of(bad, "c.json"),
                    Catch::Contains("$.kernel_ends: expected \"launch\" or \"gpu\""));
  CHECK_THROWS_WITH(program::run_config_of(nlohmann::json::array(), "c.json"),
                    Catch::Contains("expected an object"));
}

TEST_CASE("program run request: the budget as bytes or a fraction of a footprint") {
  program::RunRequest r;
  CHECK(program::budget_bytes(r) == 0); // 100% with no footprint: no budget
  r.budget_fraction = 0.5;
  CHECK_THROWS_WITH(program::budget_bytes(r), Catch::Contains("--footprint"));
  r.footprint_bytes = 10 * kMiB;
  CHECK(program::budget_bytes(r) == 6 * kMiB); // 2.5 chunks round up, as the replay's
  r.budget_bytes = 3 * kMiB;
  CHECK(program::budget_bytes(r) == 3 * kMiB);
}

TEST_CASE("program run request: bad options fail before the program starts") {
  program::RunRequest r;
  r.command = {"/bin/true"};
  r.policy = "nosuch";
  CHECK_THROWS_WITH(program::run_program(r), Catch::Contains("--policy nosuch: unknown policy"));
  r.policy = "pump";
  r.params = {{"no_such_param", 1}};
  CHECK_THROWS_WITH(program::run_program(r), Catch::Contains("no_such_param"));
  r.params = nlohmann::json::object();
  r.trace = "/no/such.fltrace";
  CHECK_THROWS_WITH(program::run_program(r), Catch::Contains("--trace /no/such.fltrace"));
  r.trace.clear();
  r.command.clear();
  CHECK_THROWS_WITH(program::run_program(r), Catch::Contains("no program given"));
}

#ifdef FAULTLINE_PROGRAM_MODULE
// The module as the injection library loads it: its entry point, a config file, the hooks, the
// measurements written at exit, and a policy error that names the policy and the launch.
TEST_CASE("program module: loaded through its seam, it measures and names its errors") {
  void* handle = dlopen(FAULTLINE_PROGRAM_MODULE, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(handle);
  auto open = reinterpret_cast<program::OpenFunction>(dlsym(handle, program::kOpenSymbol));
  REQUIRE(open);
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("faultline-module-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string config = (dir / "config.json").string(), out = (dir / "m.json").string();
  FakeDevice device;
  char message[512] = "";
  std::ofstream(config) << R"({"policy": "nosuch", "out": "x"})";
  CHECK(open(&device, config.c_str(), message, sizeof(message)) == nullptr);
  CHECK_THAT(std::string(message), Catch::Contains("unknown policy \"nosuch\""));

  std::ofstream(config)
      << nlohmann::json({{"policy", "pump"}, {"budget_bytes", 4 * kMiB}, {"out", out}}).dump();
  program::Hooks* hooks = open(&device, config.c_str(), message, sizeof(message));
  REQUIRE(hooks);
  const uint64_t words[] = {kBase};
  CHECK(hooks->alloc(kBase, 2 * kMiB, true));
  CHECK(hooks->launch("fwd", words, 1, 0));
  CHECK(hooks->kernels_done(1));
  CHECK(hooks->step());
  CHECK(hooks->alloc(kBase + 2 * kMiB, 6 * kMiB, true));
  const uint64_t big[] = {kBase + 2 * kMiB};
  CHECK_FALSE(hooks->launch("too_big", big, 1, 0));
  CHECK_THAT(std::string(hooks->error()),
             Catch::Contains("policy \"pump\", at kernel #1 (too_big)"));
  CHECK(hooks->finish(123456789));
  const nlohmann::json doc = nlohmann::json::parse(std::ifstream(out));
  CHECK(doc["results"]["kernels"] == 2);
  // What the run cost the program's CPU: the library's figure as handed over, and the hooks'
  // own time, which the library's includes.
  CHECK(doc["results"]["run_library_ns"] == 123456789);
  CHECK(doc["results"]["run_hooks_ns"].get<uint64_t>() > 0);
  CHECK(doc["results"]["run_hooks_ns"].get<uint64_t>() >=
        doc["results"]["policy_decision_ns"].get<uint64_t>());
  CHECK(doc["config"]["policy"] == "pump");
  delete hooks;
  std::filesystem::remove_all(dir);
}
#endif

TEST_CASE("program run: with a trace, the books are the trace's, however the run's segments lie") {
  fltest::TempDir dir;
  const std::string trace = fltest::dnn_trace(dir, 11);
  const uint64_t footprint = trace::compute_stats(trace).footprint_bytes();
  for (const char* policy : {"ondemand", "oracle", "schedule", "pump", "deepum"})
    for (double fraction : {1.0, 0.5}) {
      // The same program, its segments 2 MB-aligned as in the trace, then 64 KB off: a trace's
      // chunk then spans two of the run's, and books of the run's chunks would need more.
      std::vector<nlohmann::json> results;
      for (uint64_t shift : {1ull << 40, (1ull << 40) + 64 * 1024}) {
        FakeDevice device;
        ManualClock clock;
        program::RunConfig c = run_config(policy, static_cast<uint64_t>(fraction * footprint));
        c.trace = trace;
        program::ProgramRun run(c, device, device.total, clock);
        program::feed(program::trace_calls(trace, shift), run);
        nlohmann::json doc = run.finish();
        results.push_back(doc["results"]);
        for (uint64_t a : device.addresses) CHECK(a >= shift); // in the run's memory
      }
      INFO(policy << " at " << fraction);
      CHECK(results[0] == results[1]);
      if (fraction == 1.0) CHECK(results[0]["evictions"] == 0);
    }
}

TEST_CASE("program run: with a trace, the policy hears the trace's allocator blocks") {
  fltest::TempDir dir;
  const std::string path = dir.file("blocks.fltrace");
  constexpr Addr kTraceBase = 0x10000000;
  {
    trace::TraceWriter w(path, {{"source", "test"}});
    w.write(trace::AllocRecord{1, trace::MemoryKind::kManaged, kTraceBase, 4 * kMiB, 0, 0});
    w.write(trace::AllocRecord{2, trace::MemoryKind::kAllocatorBlock, kTraceBase, kMiB, 1, 1});
    trace::KernelRecord k;
    k.name = "fwd";
    k.start = 2;
    k.args = {2};
    k.accesses = {{kTraceBase / kBigPageSize, 0, AccessType::kRead}};
    w.write(k);
    w.write(trace::FreeRecord{2, 3});
    w.write(trace::AllocRecord{3, trace::MemoryKind::kAllocatorBlock, kTraceBase + 2 * kMiB, kMiB,
                               4, 1});
    k.start = 5;
    k.args = {3};
    k.accesses = {{(kTraceBase + 2 * kMiB) / kBigPageSize, 0, AccessType::kRead}};
    w.write(k);
    w.close();
  }
  FakeDevice device;
  ManualClock clock;
  program::RunConfig c = run_config("pump", 0);
  c.trace = path;
  program::ProgramRun run(c, device, device.total, clock);
  run.alloc(kBase + 64 * 1024, 4 * kMiB, true); // the segment, 64 KB off 2 MB in the run
  device.take();
  // The program names the segment; PUMP prefetches the block the trace's launch named, not the
  // segment, at the run's address of it.
  run.launch("fwd", {kBase + 64 * 1024}, 0);
  CHECK(device.take() == std::vector<std::string>{"prefetch 0M 1M"});
  CHECK(device.addresses.back() == kBase + 64 * 1024);
  run.kernels_done(1);
  device.addresses.clear();
  run.launch("fwd", {kBase + 64 * 1024}, 0); // block 2 freed, block 3 made before it
  CHECK(device.take() == std::vector<std::string>{"prefetch 2M 1M"});
  CHECK(device.addresses.back() == kBase + 64 * 1024 + 2 * kMiB);
  run.kernels_done(2);
  CHECK(run.finish()["results"]["prefetch"]["issued_bytes"] == 2 * kMiB);
}

TEST_CASE("program run: with a trace, the pages the host touched leave the books") {
  fltest::TempDir dir;
  const std::string path = dir.file("host.fltrace");
  constexpr Addr kTraceBase = 0x10000000;
  const auto write = [&](bool host_touch) {
    trace::TraceWriter w(path, {{"source", "test"}});
    w.write(trace::AllocRecord{1, trace::MemoryKind::kManaged, kTraceBase, 4 * kMiB, 0, 0});
    trace::KernelRecord k;
    k.name = "k";
    k.start = 2;
    k.args = {1};
    const uint64_t first = kTraceBase / kBigPageSize;
    k.accesses = {{first, 0, AccessType::kRead}, {first + 1, 0, AccessType::kRead}};
    w.write(k);
    // The host writes the first 64 KB page and 4 KB of the second: the first leaves the books,
    // the second, mostly still on the GPU, stays (the safe side of the budget).
    if (host_touch)
      w.write(trace::HostAccessRecord{3, kTraceBase, kBigPageSize + 4096, AccessType::kWrite});
    k.start = 4;
    w.write(k);
    w.close();
  };
  const auto run_it = [&] {
    FakeDevice device;
    ManualClock clock;
    program::RunConfig c = run_config("ondemand", 8 * kMiB);
    c.trace = path;
    program::ProgramRun run(c, device, device.total, clock);
    run.alloc(kBase, 4 * kMiB, true);
    run.launch("k", {kBase}, 0);
    run.kernels_done(1);
    run.launch("k", {kBase}, 0);
    run.kernels_done(2);
    return run.finish()["results"];
  };
  write(false);
  const nlohmann::json apart = run_it();
  CHECK(apart["faults"] == 2);
  CHECK(apart["bytes_gpu_to_host"] == 0);
  write(true);
  const nlohmann::json touched = run_it();
  CHECK(touched["faults"] == 3); // the second launch faults the page the host took back
  CHECK(touched["bytes_gpu_to_host"] == kBigPageSize);
  CHECK(touched["bytes_host_to_gpu"] == 3 * kBigPageSize);
  CHECK(touched["evictions"] == 0); // the host's faults are no budget eviction
}

TEST_CASE("program run: evictions count the pages the books held, not the range") {
  FakeDevice device;
  ManualClock clock;
  program::ProgramRun run(run_config("test-evict-some", 8 * kMiB), device, device.total, clock);
  run.alloc(kBase, 4 * kMiB, true);
  run.launch("k0", {kBase}, 0); // the allocation, all 64 pages, into the books
  run.kernels_done(1);
  device.take();
  // The policy evicts 1 MiB and 100 bytes before k1: the call covers the range, the books let go
  // of the 16 whole pages in it (the 17th is only touched) and count them.
  run.launch("k1", {kBase + 3 * kMiB}, 0);
  CHECK(device.take() == std::vector<std::string>{"after", "evict 0M 1M", "order 0"});
  run.kernels_done(2);
  const nlohmann::json r = run.finish()["results"];
  CHECK(r["policy_evicted_bytes"] == 16 * kBigPageSize);
  CHECK(r["bytes_gpu_to_host"] == 16 * kBigPageSize);
  CHECK(r["faults"] == 64 + 16); // k1 names the allocation again: the 16 pages come back
}
