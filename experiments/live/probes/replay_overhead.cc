// Where a live replay's time goes between and inside kernels: the replay's device
// (libfaultline_live.so) driven through its own interface, one factor at a time. Most cases
// fault nothing; the first-touch ones fault fresh pages in, as a first iteration does.
//   build/probes/replay_overhead build-gpu/libfaultline_live.so   (built by CMake here; carry it)
// Prints one line per case: median microseconds per kernel (launch to end, drains untimed).
#include "experiments/live/probes/probe_device.h"

#include <algorithm>
#include <thread>
#include <vector>

using namespace faultline::live;
using probe::now_ns;

namespace {
constexpr uint64_t kBlock = 2 << 20;
constexpr uint32_t kPagesPerBlock = 32;

struct Case {
  const char* name;
  uint64_t pages;      // resident 64 KB big pages each kernel touches (dense, block by block)
  int drain;           // between kernels, untimed: 0 none, 1 synchronize(), 2 quiesce() as the
                       // replay did, 3 quiesce() then 200 us asleep, 4 the same, 2 ms; 5 the
                       // host busy for 500 us (a policy deciding), 6 asleep for 500 us,
                       // 7 writing a 1 GB buffer for 500 us (a policy's tables, caches cleared)
  uint64_t prefetches; // 2 MB prefetch calls of resident blocks before each kernel
  bool by_fault;       // memory populated by a touch kernel instead of a prefetch
  bool fresh = false;  // nothing populated: each kernel first-touches pages never touched
};

void busy_for(int64_t ns, bool trash) {
  static std::vector<char> buffer(size_t{1} << 30);
  size_t at = 0;
  for (const int64_t until = now_ns() + ns; now_ns() < until;)
    if (trash)
      for (int i = 0; i < 4096; ++i, at = (at + 4160) % buffer.size()) buffer[at]++;
}

double run(LiveDevice& d, const Case& c, uint64_t blocks) {
  void* p = d.alloc_managed(blocks * kBlock);
  if (!p) std::exit((std::printf("alloc failed: %s\n", d.error()), 1));
  d.set_slot(0, p, blocks * kBlock);
  std::vector<Touch> all;
  for (uint32_t page = 0; page < blocks * kPagesPerBlock; ++page) all.push_back({1, page});
  d.upload_touches(all.data(), all.size());
  if (c.by_fault)
    d.run_kernel(0, all.size(), 0);
  else if (!c.fresh)
    d.prefetch_to_gpu(p, blocks * kBlock);
  d.quiesce();
  std::vector<int64_t> times;
  const uint64_t windows = (blocks * kPagesPerBlock) / std::max<uint64_t>(1, c.pages);
  for (int i = 0; i < 200; ++i) {
    const uint64_t first = c.pages ? (i % windows) * c.pages : 0;
    const int64_t t0 = now_ns();
    for (uint64_t k = 0; k < c.prefetches; ++k)
      d.prefetch_to_gpu(static_cast<char*>(p) + ((i * 7 + k) % blocks) * kBlock, kBlock);
    d.run_kernel(first, c.pages, 0);
    times.push_back(now_ns() - t0);
    if (c.drain == 1) d.synchronize();
    if (c.drain >= 2 && c.drain <= 4) d.quiesce();
    if (c.drain == 3 || c.drain == 4)
      std::this_thread::sleep_for(std::chrono::microseconds(c.drain == 3 ? 200 : 2000));
    if (c.drain == 5 || c.drain == 7) busy_for(500000, c.drain == 7);
    if (c.drain == 6) std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  d.free_managed(p);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2] / 1e3;
}
} // namespace

int main(int argc, char** argv) {
  LiveDevice* d = probe::open_device(argc > 1 ? argv[1] : "build-gpu/libfaultline_live.so");
  const uint64_t blocks = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1024;
  const Case cases[] = {
      {"empty", 0, 0, 0, false},
      {"empty+sync", 0, 1, 0, false},
      {"empty+drain", 0, 2, 0, false},
      {"empty+drain+200us", 0, 3, 0, false},
      {"empty+drain+2ms", 0, 4, 0, false},
      {"512 pages+drain", 512, 2, 0, false},
      {"512 pages+drain+2ms", 512, 4, 0, false},
      {"4096 faulted-in+drain", 4096, 2, 0, true},
      {"4096 faulted-in+drain+2ms", 4096, 4, 0, true},
      {"empty+8 prefetches", 0, 0, 8, false},
      {"empty+8 prefetches+sync", 0, 1, 8, false},
      {"empty+8 prefetches+drain", 0, 2, 8, false},
      {"empty+8 prefetches+drain+2ms", 0, 4, 8, false},
      {"empty+64 prefetches+drain+2ms", 0, 4, 64, false},
      {"empty+500us busy", 0, 5, 0, false},
      {"empty+500us asleep", 0, 6, 0, false},
      {"512 pages+500us busy", 512, 5, 0, false},
      {"4096 faulted-in+500us busy", 4096, 5, 0, true},
      {"empty+8 prefetches+500us busy", 0, 5, 8, false},
      {"512 pages+500us writing 1GB", 512, 7, 0, false},
      {"128 first-touch", 128, 0, 0, false, true},
      {"128 first-touch+sync", 128, 1, 0, false, true},
      {"128 first-touch+500us busy", 128, 5, 0, false, true},
      {"128 first-touch+500us asleep", 128, 6, 0, false, true},
      {"128 first-touch+500us writing 1GB", 128, 7, 0, false, true},
  };
  std::printf("device %s, %llu blocks\n", d->name(), static_cast<unsigned long long>(blocks));
  for (const Case& c : cases) std::printf("%-28s %8.1f us\n", c.name, run(*d, c, blocks));
  return 0;
}
