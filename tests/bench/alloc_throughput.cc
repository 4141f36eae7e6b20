// Allocator models: events (allocs and frees) replayed per second, on the allocation history of
// OPT-1.3B training with recompute captured on the H200 (32,643 events), and the reading of that
// snapshot (a 3.5 MB pickle, zstd-compressed).
#include "sim/alloc/replay.h"
#include "source_dir.h"

#include <benchmark/benchmark.h>

namespace {

using namespace faultline;

const std::string kSnapshot =
    std::string(FAULTLINE_SOURCE_DIR) + "/traces/alloc/opt-1.3b-recompute-b8.pickle.zst";

void BM_ReadSnapshot(benchmark::State& state) {
  size_t events = 0;
  for (auto _ : state) events = alloc::read_history(kSnapshot).events.size();
  state.counters["events"] = static_cast<double>(events);
}

void BM_Replay(benchmark::State& state, const char* allocator) {
  const alloc::History history = alloc::read_history(kSnapshot);
  const alloc::ReplayConfig config;
  for (auto _ : state) benchmark::DoNotOptimize(alloc::replay(history, allocator, config));
  state.counters["events_per_s"] = benchmark::Counter(
      static_cast<double>(history.events.size()), benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_ReadSnapshot)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Replay, caching, "caching")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Replay, expandable, "expandable")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Replay, gmlake, "gmlake")->Unit(benchmark::kMillisecond);

} // namespace
