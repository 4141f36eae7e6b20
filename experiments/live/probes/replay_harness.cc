// What the live replay's own bookkeeping costs inside its timed spans: the replay driven on a
// device that does nothing, so each kernel's span is the host work between its launch event
// and its end (the budget's books, the policy's actions turned into calls), no GPU.
//   build/probes/replay_harness TRACE POLICY BUDGET      (built by CMake with everything else)
#include "sim/core/types.h"
#include "sim/live/device.h"
#include "sim/live/replay.h"

#include <cstdio>
#include <cstdlib>

namespace live = faultline::live;

namespace {

struct NullDevice : live::LiveDevice {
  uint64_t next = 1ull << 30, prefetch_calls = 0;
  const char* name() override { return "null device"; }
  uint64_t free_bytes() override { return 1ull << 50; }
  void* alloc_managed(uint64_t bytes) override {
    next = (next + faultline::kBlockSize - 1) / faultline::kBlockSize * faultline::kBlockSize;
    void* p = reinterpret_cast<void*>(next);
    next += bytes;
    return p;
  }
  void free_managed(void*) override {}
  void set_slot(uint32_t, void*, uint64_t) override {}
  bool upload_touches(const live::Touch*, uint64_t) override { return true; }
  bool run_kernel(uint64_t, uint64_t, uint64_t) override { return true; }
  void prefetch_to_gpu(void*, uint64_t) override { ++prefetch_calls; }
  void evict_to_host(void*, uint64_t) override {}
  void prefetch_to_peer(void*, uint64_t) override {}
  uint64_t peer_free_bytes() override { return 0; }
  void discard(void*, uint64_t) override {}
  void advise_remote(void*, uint64_t, bool) override {}
  void host_write(void*, uint64_t) override {}
  void synchronize() override {}
  void quiesce() override {}
  live::Counters counters() override { return {}; }
  uint64_t take_faults(uint64_t*, uint64_t) override { return 0; }
  bool peer_copy(uint64_t, bool) override { return false; }
  const char* error() override { return ""; }
};

} // namespace

int main(int argc, char** argv) {
  if (argc != 4) return std::fprintf(stderr, "usage: replay_harness TRACE POLICY BUDGET\n"), 2;
  NullDevice device;
  live::ReplayRequest request;
  request.trace_path = argv[1];
  request.policy = argv[2];
  request.budget_fraction = std::atof(argv[3]);
  request.margin = 0;
  request.per_kernel = true;
  const auto result = live::run_replay(request, device);
  double span_us = 0;
  for (const auto& k : result["kernels"]) span_us += k["gpu_ns"].get<double>() / 1e3;
  const size_t kernels = result["kernels"].size();
  std::printf("%s %s %s: %zu kernels, %.1f us a kernel, %llu prefetch calls", argv[1], argv[2],
              argv[3], kernels, span_us / kernels,
              static_cast<unsigned long long>(device.prefetch_calls));
  std::printf("\n");
  return 0;
}
