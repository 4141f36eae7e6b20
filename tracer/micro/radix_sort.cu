// A least-significant-digit radix sort of 32-bit keys on managed memory: four passes of eight
// bits, each a histogram per block, a scan of the counts and a stable scatter into a second
// buffer. Every pass reads one buffer in order and writes the other at 256 moving fronts, so
// each scatter touches every page of both buffers. A hold-out program of the live fidelity
// report (experiments/live/holdout/): never used to tune the model.
//
//   radix_sort [--mib N] [--steps S]
//
// Each step, inside a profiler range (cudaProfilerStart marks each step's start): a kernel
// fills the keys (a hash of the index and the step), the four passes sort them, then the host
// checks every 4096th key against the next one it reads (one page in four). N MiB is split over
// the two key buffers. Prints one JSON line.
#include "tracer/micro/managed.h"
#include "tracer/micro/options.h"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

namespace {

constexpr int kDigits = 256;  // eight bits a pass
constexpr int kBlocks = 1024; // each block sorts one contiguous chunk of the keys per pass
constexpr int kTile = 256;    // keys a block places at once (one per thread)
static_assert(kTile == kDigits, "scatter: thread t also keeps digit t's counts");

void check(cudaError_t status, const char* what) {
  micro::check("radix_sort", status, what);
}

__device__ uint32_t digit(uint32_t key, int shift) {
  return (key >> shift) & (kDigits - 1);
}

__global__ void fill(uint32_t* keys, size_t n, uint32_t step) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ (step * 0x9e3779b9u);
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    keys[i] = h;
  }
}

// counts[d * kBlocks + b]: how many keys of block b's chunk have digit d.
__global__ void histogram(const uint32_t* keys, size_t n, size_t chunk, int shift,
                          uint32_t* counts) {
  __shared__ uint32_t local[kDigits];
  local[threadIdx.x] = 0;
  __syncthreads();
  const size_t begin = blockIdx.x * chunk, end = begin + chunk < n ? begin + chunk : n;
  for (size_t i = begin + threadIdx.x; i < end; i += blockDim.x)
    atomicAdd(&local[digit(keys[i], shift)], 1u);
  __syncthreads();
  counts[threadIdx.x * kBlocks + blockIdx.x] = local[threadIdx.x];
}

// One block: counts becomes the exclusive prefix sum in digit-major order (where each block's
// keys of each digit start in the output).
__global__ void scan(uint32_t* counts) {
  __shared__ uint32_t totals[kDigits];
  uint32_t sum = 0;
  for (int b = 0; b < kBlocks; ++b) {
    const uint32_t c = counts[threadIdx.x * kBlocks + b];
    counts[threadIdx.x * kBlocks + b] = sum;
    sum += c;
  }
  totals[threadIdx.x] = sum;
  __syncthreads();
  uint32_t before = 0;
  for (int d = 0; d < static_cast<int>(threadIdx.x); ++d) before += totals[d];
  for (int b = 0; b < kBlocks; ++b) counts[threadIdx.x * kBlocks + b] += before;
}

// Stable: the keys of each staged tile go out in index order within their digit. A key's place
// is its block's next slot for the digit, plus the keys of that digit in the tile's earlier
// warps, plus its rank among its warp's lanes of the same digit, so every thread stores once.
__global__ void scatter(const uint32_t* in, uint32_t* out, size_t n, size_t chunk, int shift,
                        const uint32_t* offsets) {
  constexpr int kWarps = kTile / 32;
  __shared__ uint32_t next[kDigits];
  __shared__ uint32_t before[kWarps][kDigits]; // a digit's keys in earlier warps of the tile
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  next[threadIdx.x] = offsets[threadIdx.x * kBlocks + blockIdx.x];
  const size_t begin = blockIdx.x * chunk, end = begin + chunk < n ? begin + chunk : n;
  for (size_t base = begin; base < end; base += kTile) {
    for (int w = 0; w < kWarps; ++w) before[w][threadIdx.x] = 0;
    __syncthreads();
    const size_t i = base + threadIdx.x;
    const bool valid = i < end;
    const uint32_t key = valid ? in[i] : 0, d = digit(key, shift);
    // A lane past the end matches nobody (a value no digit has).
    const unsigned peers = __match_any_sync(0xffffffffu, valid ? d : kDigits + lane);
    const unsigned rank = __popc(peers & ((1u << lane) - 1));
    if (valid && rank == 0) before[warp][d] = __popc(peers);
    __syncthreads();
    uint32_t tile_count = 0; // thread t: the counts of digit t become exclusive over warps
    for (int w = 0; w < kWarps; ++w) {
      const uint32_t c = before[w][threadIdx.x];
      before[w][threadIdx.x] = tile_count;
      tile_count += c;
    }
    __syncthreads();
    if (valid) out[next[d] + before[warp][d] + rank] = key;
    __syncthreads();
    next[threadIdx.x] += tile_count;
  }
}

struct Options {
  size_t mib = 1024;
  int steps = 3;
};

Options parse(int argc, char** argv) {
  Options o; // more than 16 GiB would overflow the 32-bit offsets
  micro::parse(
      "radix_sort", argc, argv,
      {micro::whole("--mib", o.mib, 8, 16384), micro::whole("--steps", o.steps, 1, 1000000)});
  return o;
}

} // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const size_t n = (o.mib << 20) / (2 * sizeof(uint32_t));
  const size_t chunk = (n + kBlocks - 1) / kBlocks;
  uint32_t* a = micro::managed<uint32_t>("radix_sort", n);
  uint32_t* b = micro::managed<uint32_t>("radix_sort", n);
  uint32_t* counts = micro::managed<uint32_t>("radix_sort", size_t(kDigits) * kBlocks);
  const auto began = std::chrono::steady_clock::now();
  size_t unsorted = 0;
  for (int step = 0; step < o.steps; ++step) {
    check(cudaProfilerStart(), "cudaProfilerStart"); // the range's start, then each step's
    fill<<<1024, 256>>>(a, n, static_cast<uint32_t>(step));
    uint32_t *in = a, *out = b;
    for (int shift = 0; shift < 32; shift += 8) {
      histogram<<<kBlocks, kDigits>>>(in, n, chunk, shift, counts);
      scan<<<1, kDigits>>>(counts);
      scatter<<<kBlocks, kDigits>>>(in, out, n, chunk, shift, counts);
      std::swap(in, out);
    }
    check(cudaDeviceSynchronize(), "sort"); // four passes: the sorted keys are back in a
    unsorted = 0;
    for (size_t i = 0; i + 1 < n; i += 4096) unsorted += a[i] > a[i + 1];
  }
  check(cudaProfilerStop(), "cudaProfilerStop");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  std::printf("{\"workload\": \"radix-sort\", \"keys\": %zu, \"bytes_per_buffer\": %zu, "
              "\"steps\": %d, \"steps_seconds\": %.4f, \"unsorted_pairs_checked\": %zu}\n",
              n, n * sizeof(uint32_t), o.steps, seconds, unsorted);
  check(cudaFree(a), "cudaFree");
  check(cudaFree(b), "cudaFree");
  check(cudaFree(counts), "cudaFree");
  return unsorted == 0 ? 0 : 1;
}
