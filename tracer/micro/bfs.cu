// Breadth-first search over a graph in managed memory, level by level: each level's kernel reads
// the frontier, gathers the edges of its vertices (rows of a CSR graph whose edge targets are
// drawn with a skew, so a few vertices hold many in-edges) and claims unvisited neighbours into
// the next frontier. Each kernel touches a different, data-dependent part of the graph, unlike
// the sweeps of the other programs. A hold-out program of the third set
// (experiments/live/holdout/): never used to tune the model.
//
//   bfs [--mib N] [--steps S] [--degree D]
//
// The host builds the graph (every page of it written on the host). Each step, inside a profiler
// range (cudaProfilerStart marks each step's start): a search from another source, one kernel
// per level, and the host reads the level count. N MiB is the graph's size, D its edges per
// vertex. Prints one JSON line.
#include "tracer/micro/managed.h"
#include "tracer/micro/options.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <utility>

namespace {

constexpr uint32_t kUnseen = 0xffffffffu;

void check(cudaError_t status, const char* what) {
  micro::check("bfs", status, what);
}

template <typename T> T* managed(size_t count) {
  return micro::managed<T>("bfs", count);
}

__global__ void clear(uint32_t* level, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    level[i] = kUnseen;
}

// One level: a warp per frontier vertex walks its edges; a neighbour is claimed once.
__global__ void expand(const uint64_t* offsets, const uint32_t* targets, uint32_t* level,
                       const uint32_t* frontier, uint32_t frontier_size, uint32_t* next,
                       uint32_t* next_size, uint32_t depth) {
  const size_t warp = (blockIdx.x * size_t(blockDim.x) + threadIdx.x) / 32;
  const unsigned lane = threadIdx.x % 32;
  const size_t warps = size_t(gridDim.x) * blockDim.x / 32;
  for (size_t f = warp; f < frontier_size; f += warps) {
    const uint32_t v = frontier[f];
    for (uint64_t e = offsets[v] + lane; e < offsets[v + 1]; e += 32) {
      const uint32_t u = targets[e];
      if (level[u] == kUnseen && atomicCAS(&level[u], kUnseen, depth + 1) == kUnseen)
        next[atomicAdd(next_size, 1u)] = u;
    }
  }
}

struct Options {
  size_t mib = 2048;
  int steps = 3;
  unsigned degree = 16;
};

Options parse(int argc, char** argv) {
  Options o;
  micro::parse("bfs", argc, argv,
               {micro::whole("--mib", o.mib, 8, 1 << 20), micro::whole("--steps", o.steps, 1, 1000),
                micro::whole("--degree", o.degree, 1, 1024)});
  return o;
}

} // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  // Bytes per vertex: its edges, its offset, its level and its place in two frontiers.
  const size_t per_vertex = o.degree * sizeof(uint32_t) + sizeof(uint64_t) + 3 * sizeof(uint32_t);
  const size_t n = std::min<size_t>((o.mib << 20) / per_vertex, size_t(1) << 31);
  const size_t m = n * o.degree;
  auto* offsets = managed<uint64_t>(n + 1);
  auto* targets = managed<uint32_t>(m);
  auto* level = managed<uint32_t>(n);
  auto* frontier = managed<uint32_t>(n);
  auto* next = managed<uint32_t>(n);
  auto* sizes = managed<uint32_t>(2);
  uint64_t x = 88172645463325252ull; // xorshift64
  for (size_t v = 0; v <= n; ++v) offsets[v] = v * o.degree;
  for (size_t e = 0; e < m; ++e) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    const double r = static_cast<double>(x >> 11) / static_cast<double>(1ull << 53);
    targets[e] = static_cast<uint32_t>(static_cast<double>(n) * r * r); // skewed to low ids
  }
  const auto began = std::chrono::steady_clock::now();
  uint32_t levels = 0, reached = 0;
  for (int step = 0; step < o.steps; ++step) {
    check(cudaProfilerStart(), "cudaProfilerStart"); // the range's start, then each step's
    clear<<<1024, 256>>>(level, n);
    check(cudaDeviceSynchronize(), "clear");
    const uint32_t source = static_cast<uint32_t>((step * 2654435761ull) % n);
    level[source] = 0;
    frontier[0] = source;
    uint32_t size = 1;
    reached = 1;
    uint32_t depth = 0;
    for (; size > 0; ++depth) {
      sizes[0] = 0;
      expand<<<2048, 256>>>(offsets, targets, level, frontier, size, next, sizes, depth);
      check(cudaDeviceSynchronize(), "expand");
      size = sizes[0];
      reached += size;
      std::swap(frontier, next);
    }
    levels = depth;
  }
  check(cudaProfilerStop(), "cudaProfilerStop");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  std::printf("{\"workload\": \"bfs\", \"vertices\": %zu, \"edges\": %zu, \"steps\": %d, "
              "\"steps_seconds\": %.4f, \"levels\": %u, \"reached\": %u}\n",
              n, m, o.steps, seconds, levels, reached);
  for (void* p :
       {static_cast<void*>(offsets), static_cast<void*>(targets), static_cast<void*>(level),
        static_cast<void*>(frontier), static_cast<void*>(next), static_cast<void*>(sizes)})
    check(cudaFree(p), "cudaFree");
  return 0;
}
