// Issue 21: one 2 MB eviction to the host costs about 190 us or about 280 us on a lent H200, and an
// instance switches between the two within seconds to minutes
// (experiments/live/data/h200-eviction-regimes/). This probe follows the level through time beside
// what could set it, to tell a copy path that slows (the link, the copy engines) from a host that
// hands out pages slowly (a virtual machine's guest memory the host must back again):
//   build/probes/eviction_level SECONDS [CHUNKS [CPU [FAR_GB [WAKE]]]]   (default 64 chunks:
//   128 MB; CPU: pin the thread to that CPU, -1: not pinned; FAR_GB: also copy into 2 MB slots
//   spread over that much pinned memory, so that each copy lands where the last ones did not;
//   WAKE 1: also time an empty kernel waited for by spinning and by sleeping until the driver's
//   interrupt wakes the thread)
// One line per round: seconds since the start; the CPU the round ended on; a fixed loop of
// arithmetic (us: the CPU's own speed); the time the hypervisor took from the guest's CPUs (steal,
// /proc/stat, ms over all of them); the eviction's median us a chunk (each 2 MB
// cudaMemPrefetchAsync to the host, its CPU time, after a kernel wrote the chunk); 2 MB copies
// from device memory into pinned (and, with FAR_GB, far pinned), warm pageable and fresh
// pageable host memory (us each, the median); the CPU writing one byte in each 4 KB page of fresh
// anonymous memory (us per 2 MB); and the guest kernel's counters that moved (/proc/vmstat). Asks
// for CHUNKS x 2 MB of managed memory once, and refuses when the GPU has not that much free with 2
// GB to spare.
#include "experiments/live/probes/probe_device.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include <fstream>
#include <map>
#include <sched.h>
#include <string>
#include <sys/mman.h>
#include <vector>

namespace {

using probe::now_ns;

constexpr size_t kChunk = 2u << 20;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::printf("%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

__global__ void write_words(uint64_t* p, size_t words, uint64_t value) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < words;
       i += size_t(gridDim.x) * blockDim.x)
    p[i] = value + i;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::map<std::string, long long> vmstat() {
  std::map<std::string, long long> out;
  std::ifstream f("/proc/vmstat");
  std::string key;
  long long value;
  while (f >> key >> value) out[key] = value;
  return out;
}

// us a 2 MB copy of each of `chunks` device chunks into `dst`, the median.
double copy_us(const char* src, char* dst, size_t chunks) {
  std::vector<double> t;
  for (size_t c = 0; c < chunks; ++c) {
    const int64_t t0 = now_ns();
    check(cudaMemcpy(dst + c * kChunk, src + c * kChunk, kChunk, cudaMemcpyDeviceToHost),
          "cudaMemcpy");
    t.push_back((now_ns() - t0) / 1e3);
  }
  return median(t);
}

// us of a fixed chain of multiplications: the CPU's speed, whatever memory does.
double arithmetic_us() {
  const int64_t t0 = now_ns();
  volatile uint64_t x = 1;
  uint64_t v = x;
  for (int i = 0; i < 2000000; ++i) v = v * 6364136223846793005ull + 1442695040888963407ull;
  x = v;
  return (now_ns() - t0) / 1e3;
}

// Steal time over all CPUs, in ms (the 8th number of /proc/stat's first line, in 10 ms ticks).
long long steal_ms() {
  std::ifstream f("/proc/stat");
  std::string cpu;
  long long v[8] = {};
  f >> cpu;
  for (long long& x : v) f >> x;
  return v[7] * 10;
}

char* fresh_map(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) std::exit((std::printf("mmap failed\n"), 1));
  return static_cast<char*>(p);
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2)
    return std::printf("usage: eviction_level SECONDS [CHUNKS [CPU [FAR_GB [WAKE]]]]\n"), 2;
  const double seconds = std::atof(argv[1]);
  const size_t chunks = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 64;
  const int pin = argc > 3 ? std::atoi(argv[3]) : -1;
  const size_t far_chunks = (argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 0) * 512;
  const bool wake = argc > 5 && std::atoi(argv[5]) == 1;
  if (pin >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(pin, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
      return std::printf("cannot pin the thread to CPU %d\n", pin), 1;
  }
  const size_t bytes = chunks * kChunk;
  size_t free_bytes = 0, total = 0;
  check(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
  if (2 * bytes + (2ull << 30) > free_bytes) {
    std::printf("refusing: %zu MB of managed and device memory do not fit the GPU's %zu MB free "
                "with 2 GB to spare\n",
                2 * bytes >> 20, free_bytes >> 20);
    return 1;
  }
  char *managed = nullptr, *device = nullptr, *pinned = nullptr;
  check(cudaMallocManaged(&managed, bytes), "cudaMallocManaged");
  check(cudaMalloc(&device, bytes), "cudaMalloc");
  check(cudaMallocHost(&pinned, bytes), "cudaMallocHost");
  char* far = nullptr;
  if (far_chunks) check(cudaMallocHost(&far, far_chunks * kChunk), "cudaMallocHost (far)");
  uint64_t slot = 1;
  char* pageable = fresh_map(bytes);
  std::memset(pageable, 1, bytes);
  check(cudaMemset(device, 7, bytes), "cudaMemset");
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  cudaMemLocation gpu{cudaMemLocationTypeDevice, 0}, host{cudaMemLocationTypeHost, 0};
  cudaEvent_t spin, sleep;
  check(cudaEventCreateWithFlags(&spin, cudaEventDisableTiming), "cudaEventCreate");
  check(cudaEventCreateWithFlags(&sleep, cudaEventDisableTiming | cudaEventBlockingSync),
        "cudaEventCreate (blocking)");
  // us from an empty kernel's launch to the thread seeing it done, waiting on `e`, the median
  // of 16.
  const auto kernel_wait_us = [&](cudaEvent_t e) {
    std::vector<double> t;
    for (int i = 0; i < 16; ++i) {
      const int64_t t0 = now_ns();
      write_words<<<1, 32, 0, stream>>>(reinterpret_cast<uint64_t*>(device), 0, 0);
      check(cudaEventRecord(e, stream), "cudaEventRecord");
      check(cudaEventSynchronize(e), "cudaEventSynchronize");
      t.push_back((now_ns() - t0) / 1e3);
    }
    return median(t);
  };

  const char* watched[] = {"pgfault",       "thp_fault_alloc", "pgalloc_normal",
                           "pgalloc_dma32", "pgalloc_movable", "pgfree",
                           "compact_stall", "thp_split_pmd",   "nr_free_pages"};
  std::printf("s cpu arith_us steal_ms evict_us pinned_us%s%s warm_us fresh_us touch_us_per_2MB",
              far ? " pinned_far_us" : "", wake ? " spin_us sleep_us" : "");
  for (const char* w : watched) std::printf(" %s", w);
  std::printf("\n");
  auto before = vmstat();
  long long steal_before = steal_ms();
  const int64_t start = now_ns();
  while ((now_ns() - start) / 1e9 < seconds) {
    write_words<<<1024, 256, 0, stream>>>(reinterpret_cast<uint64_t*>(managed), bytes / 8, 1);
    check(cudaStreamSynchronize(stream), "the writing kernel");
    std::vector<double> evict;
    for (size_t c = 0; c < chunks; ++c) {
      const int64_t t0 = now_ns();
      check(cudaMemPrefetchAsync(managed + c * kChunk, kChunk, host, 0, stream),
            "cudaMemPrefetchAsync to the host");
      evict.push_back((now_ns() - t0) / 1e3);
    }
    check(cudaStreamSynchronize(stream), "the evictions");
    const double evict_us = median(evict);
    const double pinned_us = copy_us(device, pinned, chunks);
    std::vector<double> far_times;
    for (size_t c = 0; far && c < chunks; ++c) {
      slot = slot * 6364136223846793005ull +
             1442695040888963407ull; // a pseudo-random slot of the far memory
      const int64_t t0 = now_ns();
      check(cudaMemcpy(far + (slot >> 33) % far_chunks * kChunk, device + c * kChunk, kChunk,
                       cudaMemcpyDeviceToHost),
            "cudaMemcpy (far)");
      far_times.push_back((now_ns() - t0) / 1e3);
    }
    const double warm_us = copy_us(device, pageable, chunks);
    char* fresh = fresh_map(bytes);
    const double fresh_us = copy_us(device, fresh, chunks);
    munmap(fresh, bytes);
    char* touched = fresh_map(bytes);
    const int64_t t0 = now_ns();
    for (size_t off = 0; off < bytes; off += 4096) touched[off] = 1;
    const double touch_us = (now_ns() - t0) / 1e3 / chunks;
    munmap(touched, bytes);
    const double arith_us = arithmetic_us();
    const auto after = vmstat();
    const long long steal = steal_ms();
    std::printf("%.2f %d %.1f %lld %.1f %.1f", (now_ns() - start) / 1e9, sched_getcpu(), arith_us,
                steal - steal_before, evict_us, pinned_us);
    if (far) std::printf(" %.1f", median(far_times));
    if (wake) std::printf(" %.1f %.1f", kernel_wait_us(spin), kernel_wait_us(sleep));
    std::printf(" %.1f %.1f %.1f", warm_us, fresh_us, touch_us);
    steal_before = steal;
    for (const char* w : watched) {
      const long long a = after.count(w) ? after.at(w) : 0, b = before.count(w) ? before.at(w) : 0;
      std::printf(" %lld", std::string(w) == "nr_free_pages" ? a : a - b);
    }
    std::printf("\n");
    std::fflush(stdout);
    before = after;
    // Back to the GPU for the next round's kernel: the blocks are written there again.
    check(cudaMemPrefetchAsync(managed, bytes, gpu, 0, stream), "cudaMemPrefetchAsync to the GPU");
    check(cudaStreamSynchronize(stream), "the prefetch");
  }
  return 0;
}
