// Simulated accesses per second on a synthetic DNN-like trace of about 10 million accesses,
// without oversubscription and at 2x oversubscription (capacity = half the footprint).
//   build/tests/faultline_bench --benchmark_counters_tabular=true
#include "sim/config/run_config.h"
#include "sim/run/simulator.h"
#include "sim/synth/synth.h"
#include "sim/trace/inspect.h"

#include <benchmark/benchmark.h>
#include <filesystem>

namespace {

using namespace faultline;

// 4 GiB footprint, 4 touches per page per kernel: 14 iterations give ~10.2M accesses.
const std::string& bench_trace() {
  static const std::string path = [] {
    const std::string p =
        (std::filesystem::temp_directory_path() / "faultline_bench.fltrace").string();
    synth::Params params;
    params.pattern = "dnn";
    params.footprint = Bytes{4} << 30;
    params.iterations = 14;
    params.layers = 24;
    params.touches = 4;
    synth::write_trace(params, p, "faultline_bench");
    return p;
  }();
  return path;
}

void BM_Simulate(benchmark::State& state, double fraction) {
  const std::string trace = bench_trace();
  const trace::TraceStats stats = trace::compute_stats(trace);
  const config::RunConfig config =
      config::parse_run_config({{"gpu", "h200"},
                                {"capacity", {{"fraction_of_footprint", fraction}}},
                                {"policy", {{"name", "ondemand"}}}},
                               "benchmark config");
  const auto chunks = static_cast<uint64_t>(fraction * static_cast<double>(stats.footprint_chunks));
  uint64_t faults = 0;
  for (auto _ : state) {
    Simulator sim(config, trace, chunks);
    faults = sim.run().faults;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * stats.accesses));
  state.counters["accesses"] = static_cast<double>(stats.accesses);
  state.counters["faults"] = static_cast<double>(faults);
  state.counters["accesses_per_s"] = benchmark::Counter(
      static_cast<double>(stats.accesses), benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK_CAPTURE(BM_Simulate, no_oversubscription, 1.0)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Simulate, oversubscription_2x, 0.5)->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
