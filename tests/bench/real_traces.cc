// The simulator on the shipped real traces (issue 23): every trace in traces/real/ at 100% and
// 50% capacity under ondemand and at 50% under deepum, pump, the oracle and schedule; decoding
// alone; and a synthetic DNN trace at 1, 10 and 100 steps (time should grow linearly with the
// steps). Reports accesses/s and faults/s (records/s for decoding), one core, the H200 profile.
//   build/tests/faultline_bench --benchmark_filter='Real|Decode|Steps'
//     --benchmark_counters_tabular=true
#include "sim/config/run_config.h"
#include "sim/run/simulator.h"
#include "sim/synth/synth.h"
#include "sim/trace/inspect.h"
#include "sim/trace/reader.h"

#include <algorithm>
#include <benchmark/benchmark.h>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace {

using namespace faultline;
namespace fs = std::filesystem;

std::vector<std::string> real_traces() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(FAULTLINE_REAL_TRACES))
    if (entry.path().extension() == ".fltrace") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end()); // the registration order is the report's order
  return names;
}

std::string real_path(const std::string& name) {
  return (fs::path(FAULTLINE_REAL_TRACES) / (name + ".fltrace")).string();
}

void simulate(benchmark::State& state, const std::string& trace, const std::string& policy,
              double fraction) {
  const trace::TraceStats stats = trace::compute_stats(trace);
  const config::RunConfig config =
      config::parse_run_config({{"gpu", "h200"},
                                {"capacity", {{"fraction_of_footprint", fraction}}},
                                {"policy", {{"name", policy}}}},
                               "benchmark config");
  const uint64_t chunks = config.capacity.chunks(stats.footprint_chunks);
  uint64_t faults = 0;
  for (auto _ : state) {
    Simulator sim(config, trace, chunks);
    faults = sim.run().faults;
  }
  state.counters["accesses"] = static_cast<double>(stats.accesses);
  state.counters["accesses_per_s"] = benchmark::Counter(
      static_cast<double>(stats.accesses), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["faults_per_s"] = benchmark::Counter(
      static_cast<double>(faults), benchmark::Counter::kIsIterationInvariantRate);
}

// Reading alone: decompression and decoding, every record, nothing simulated.
void decode(benchmark::State& state, const std::string& trace) {
  uint64_t records = 0, accesses = 0;
  for (auto _ : state) {
    trace::TraceReader reader(trace);
    trace::Record r;
    records = accesses = 0;
    while (reader.next(r)) {
      ++records;
      if (r.type == trace::RecordType::kKernel) accesses += r.kernel.accesses.size();
    }
  }
  state.counters["records_per_s"] = benchmark::Counter(
      static_cast<double>(records), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["accesses_per_s"] = benchmark::Counter(
      static_cast<double>(accesses), benchmark::Counter::kIsIterationInvariantRate);
}

// A 1 GiB DNN-like trace of STEPS training steps, written once per step count (the benchmark
// library calls a benchmark several times while it settles its iteration count).
std::string steps_trace(int steps) {
  static std::map<int, std::string> written;
  if (auto it = written.find(steps); it != written.end()) return it->second;
  const std::string p =
      (fs::temp_directory_path() / ("faultline_bench_steps" + std::to_string(steps) + ".fltrace"))
          .string();
  synth::Params params;
  params.pattern = "dnn";
  params.footprint = Bytes{1} << 30;
  params.iterations = steps;
  params.layers = 24;
  params.touches = 4;
  synth::write_trace(params, p, "faultline_bench_steps");
  return written[steps] = p;
}

const bool registered = [] {
  for (const std::string& name : real_traces()) {
    const std::string path = real_path(name);
    benchmark::RegisterBenchmark(("Real/" + name + "/ondemand/100").c_str(), simulate, path,
                                 "ondemand", 1.0)
        ->Unit(benchmark::kMillisecond);
    for (const char* policy : {"ondemand", "deepum", "pump", "oracle", "schedule"})
      benchmark::RegisterBenchmark(("Real/" + name + "/" + policy + "/50").c_str(), simulate, path,
                                   policy, 0.5)
          ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("Decode/" + name).c_str(), decode, path)
        ->Unit(benchmark::kMillisecond);
  }
  for (int steps : {1, 10, 100})
    benchmark::RegisterBenchmark(
        ("Steps/dnn/ondemand/50/" + std::to_string(steps)).c_str(),
        [steps](benchmark::State& state) { simulate(state, steps_trace(steps), "ondemand", 0.5); })
        ->Unit(benchmark::kMillisecond);
  return true;
}();

} // namespace
