// What the policy host adds to each call of a program under `faultline run`, on the CPU: the
// launches, allocations and frees of a shipped trace (the shipped ResNet-50, three steps) fed to a
// ProgramRun over a device that does nothing, each launch's end reported at once. Launches per
// second and ns per launch, per policy, with no budget and at half the footprint; "traced" with
// the trace given, so that the budget counts each operation's pages and the policy hears the
// trace's allocator blocks, as in a run with --trace. The run's start (the policy
// made, the trace read) is left out; so are the CUPTI callback and the CUDA calls the injection
// library makes around each call.
#include "sim/program/program.h"
#include "sim/program/trace_calls.h"
#include "sim/trace/inspect.h"
#include "sim/trace/reader.h"

#include <benchmark/benchmark.h>

namespace {

using namespace faultline;

const std::string kTrace = std::string(FAULTLINE_REAL_TRACES) + "/resnet50.fltrace";

class NoDevice : public program::Device {
public:
  void prefetch_to_gpu(uint64_t, uint64_t) override {}
  void evict_to_host(uint64_t, uint64_t) override {}
  void discard(uint64_t, uint64_t) override {}
  void advise_remote(uint64_t, uint64_t, bool) override {}
  void order_before(uint64_t) override {}
  void order_after_launched() override {}
  void synchronize() override {}
  uint64_t migration_gpu_ns() override { return 0; }
  uint64_t used_bytes() override { return 0; }
  uint64_t total_bytes() override { return 80ull << 30; }
  const char* error() override { return ""; }
};

void BM_ProgramLaunch(benchmark::State& state, const char* policy, double fraction,
                      bool traced = false) {
  static const std::vector<program::TraceCall> calls = program::trace_calls(kTrace);
  const uint64_t footprint = trace::compute_stats(kTrace).footprint_bytes();
  NoDevice device;
  program::RunClock clock;
  uint64_t launches = 0;
  for (auto _ : state) {
    state.PauseTiming();
    program::RunConfig config;
    config.policy = policy;
    config.budget_bytes = fraction < 1 ? static_cast<uint64_t>(fraction * footprint) : 0;
    if (traced) config.trace = kTrace; // the budget counts each operation's pages
    program::ProgramRun run(config, device, device.total_bytes(), clock);
    state.ResumeTiming();
    program::feed(calls, run);
    launches = run.kernels();
    benchmark::DoNotOptimize(run.finish());
  }
  state.counters["ns_per_launch"] = benchmark::Counter(
      static_cast<double>(launches),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

BENCHMARK_CAPTURE(BM_ProgramLaunch, ondemand_100, "ondemand", 1.0)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ProgramLaunch, ondemand_50, "ondemand", 0.5)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ProgramLaunch, ondemand_50_traced, "ondemand", 0.5, true)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ProgramLaunch, pump_50, "pump", 0.5)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ProgramLaunch, pump_50_traced, "pump", 0.5, true)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ProgramLaunch, deepum_50, "deepum", 0.5)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ProgramLaunch, schedule_100, "schedule", 1.0)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ProgramLaunch, schedule_50, "schedule", 0.5)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ProgramLaunch, schedule_50_traced, "schedule", 0.5, true)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ProgramLaunch, oracle_100_traced, "oracle", 1.0, true)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ProgramLaunch, oracle_50_traced, "oracle", 0.5, true)
    ->Unit(benchmark::kMillisecond);

} // namespace
