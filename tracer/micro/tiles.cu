// An out-of-core tiled computation on managed memory whose data the host initialises and keeps
// feeding: the hold-out CUDA program of `faultline run` (experiments/live/holdout/), never used
// to tune anything.
//
//   tiles [--mib N] [--tiles T] [--steps S]
//
// The host fills T tiles (N MiB in all, one managed allocation each). Each step, inside a profiler
// range (cudaProfilerStart marks each step's start): the host overwrites one tile (new data
// arriving), then one kernel per tile, in order, reads the tile, scales it in place and adds its
// sum into the tile's entry of a small accumulator; the host reads the accumulator. A kernel
// names one tile and the accumulator, so each needs 1/T of the data: a budget of half the
// footprint holds any kernel, and a policy that sees the order of the tiles can stream them.
// Prints one JSON line.
#include "tracer/micro/managed.h"
#include "tracer/micro/options.h"

#include <chrono>
#include <cstdio>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <vector>

namespace {

void check(cudaError_t status, const char* what) {
  micro::check("tiles", status, what);
}

__global__ void scale_and_sum(float* tile, size_t n, float factor, double* acc) {
  double sum = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const float v = tile[i] * factor;
    tile[i] = v;
    sum += v;
  }
  atomicAdd(acc, sum);
}

struct Options {
  size_t mib = 2048;
  int tiles = 16, steps = 4;
};

Options parse(int argc, char** argv) {
  Options o;
  micro::parse("tiles", argc, argv,
               {micro::whole("--mib", o.mib, 16, 1 << 20),
                micro::whole("--tiles", o.tiles, 2, 4096),
                micro::whole("--steps", o.steps, 1, 1000000)});
  return o;
}

} // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const size_t n = (o.mib << 20) / o.tiles / sizeof(float);
  std::vector<float*> tiles;
  for (int t = 0; t < o.tiles; ++t) {
    tiles.push_back(micro::managed<float>("tiles", n));
    for (size_t i = 0; i < n; ++i) tiles.back()[i] = static_cast<float>((i * 2654435761u) % 1000);
  }
  double* acc = micro::managed<double>("tiles", o.tiles);
  const auto began = std::chrono::steady_clock::now();
  double checksum = 0;
  for (int step = 0; step < o.steps; ++step) {
    check(cudaProfilerStart(), "cudaProfilerStart"); // the range's start, then each step's
    float* fresh = tiles[step % o.tiles];
    for (size_t i = 0; i < n; i += 1024) fresh[i] = static_cast<float>(step);
    for (int t = 0; t < o.tiles; ++t) acc[t] = 0;
    for (int t = 0; t < o.tiles; ++t) scale_and_sum<<<1024, 256>>>(tiles[t], n, 0.999f, acc + t);
    check(cudaDeviceSynchronize(), "tiles");
    for (int t = 0; t < o.tiles; ++t) checksum += acc[t];
  }
  check(cudaProfilerStop(), "cudaProfilerStop");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  std::printf("{\"workload\": \"tiles\", \"tiles\": %d, \"bytes_per_tile\": %zu, \"steps\": %d, "
              "\"steps_seconds\": %.4f, \"checksum\": %.6g}\n",
              o.tiles, n * sizeof(float), o.steps, seconds, checksum);
  for (float* t : tiles) check(cudaFree(t), "cudaFree");
  check(cudaFree(acc), "cudaFree");
  return 0;
}
