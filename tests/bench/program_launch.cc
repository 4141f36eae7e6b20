// What the policy host adds to each call of a program under `faultline run`, on the CPU: the
// launches, allocations and frees of a shipped trace (the shipped ResNet-50, three steps) fed to a
// ProgramRun over a device that does nothing, each launch's end reported at once. Launches per
// second and ns per launch, per policy, with no budget and at half the footprint. The CUPTI
// callback and the CUDA calls the injection library makes around it are not in this number.
#include "sim/program/program.h"
#include "sim/trace/inspect.h"
#include "sim/trace/reader.h"

#include <benchmark/benchmark.h>
#include <unordered_map>

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
  uint64_t used_bytes() override { return 0; }
  uint64_t total_bytes() override { return 80ull << 30; }
  const char* error() override { return ""; }
};

// The program's calls as the injection library reports them: segments (allocator blocks are not
// seen in a program), launches with the addresses of the blocks they name.
struct Call {
  enum Kind { kAlloc, kFree, kLaunch } kind;
  uint64_t address = 0, bytes = 0;
  bool managed = true;
  std::string name;
  std::vector<uint64_t> words;
};

std::vector<Call> calls_of(const std::string& path) {
  trace::TraceReader reader(path);
  trace::Record r;
  std::unordered_map<uint64_t, trace::AllocRecord> live;
  std::vector<Call> out;
  while (reader.next(r)) {
    if (r.type == trace::RecordType::kAlloc) {
      live[r.alloc.id] = r.alloc;
      if (r.alloc.kind != trace::MemoryKind::kAllocatorBlock)
        out.push_back({Call::kAlloc, r.alloc.address, r.alloc.size,
                       r.alloc.kind == trace::MemoryKind::kManaged, {}, {}});
    } else if (r.type == trace::RecordType::kFree) {
      const trace::AllocRecord a = live.at(r.free.id);
      live.erase(r.free.id);
      if (a.kind != trace::MemoryKind::kAllocatorBlock)
        out.push_back({Call::kFree, a.address, 0, true, {}, {}});
    } else if (r.type == trace::RecordType::kKernel) {
      Call c{Call::kLaunch, 0, 0, true, r.kernel.name, {}};
      for (uint64_t id : r.kernel.args)
        if (auto it = live.find(id); it != live.end()) c.words.push_back(it->second.address);
      out.push_back(std::move(c));
    }
  }
  return out;
}

void BM_ProgramLaunch(benchmark::State& state, const char* policy, double fraction) {
  static const std::vector<Call> calls = calls_of(kTrace);
  const uint64_t footprint = trace::compute_stats(kTrace).footprint_bytes();
  NoDevice device;
  program::RunClock clock;
  uint64_t launches = 0;
  for (auto _ : state) {
    program::RunConfig config;
    config.policy = policy;
    config.budget_bytes = fraction < 1 ? static_cast<uint64_t>(fraction * footprint) : 0;
    program::ProgramRun run(config, device, device.total_bytes(), clock);
    for (const Call& c : calls) {
      if (c.kind == Call::kAlloc) run.alloc(c.address, c.bytes, c.managed);
      if (c.kind == Call::kFree) run.free(c.address);
      if (c.kind != Call::kLaunch) continue;
      run.launch(c.name, c.words, 0);
      run.kernels_done(run.kernels());
    }
    launches = run.kernels();
    benchmark::DoNotOptimize(run.finish());
  }
  state.counters["ns_per_launch"] = benchmark::Counter(
      static_cast<double>(launches), benchmark::Counter::kIsIterationInvariantRate |
                                         benchmark::Counter::kInvert);
}

BENCHMARK_CAPTURE(BM_ProgramLaunch, ondemand_100, "ondemand", 1.0)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ProgramLaunch, ondemand_50, "ondemand", 0.5)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ProgramLaunch, pump_50, "pump", 0.5)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ProgramLaunch, deepum_50, "deepum", 0.5)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ProgramLaunch, schedule_100, "schedule", 1.0)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ProgramLaunch, schedule_50, "schedule", 0.5)->Unit(benchmark::kMillisecond);

} // namespace
