// The data movement of a 2D transform on managed memory: a pass along the rows, a tiled
// transpose into a second matrix, a pass along its rows (the first's columns), a transpose back.
// The transposes write each 32 x 32 tile across 32 rows, so every kernel touches all pages of
// both matrices in an order unlike any shipped trace. A hold-out program of the live fidelity
// report (experiments/live/holdout/): never used to tune the model.
//
//   transpose2d [--mib N] [--steps S]
//
// The host fills the matrix (every page written on the host). Each step, inside a profiler range
// (cudaProfilerStart marks each step's start): the four kernels, then the host reads the
// diagonal. N MiB is split over the two square matrices of floats. Prints one JSON line.
#include "tracer/micro/managed.h"
#include "tracer/micro/options.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

namespace {

constexpr int kTile = 32;

void check(cudaError_t status, const char* what) {
  micro::check("transpose2d", status, what);
}

float* managed(size_t bytes) {
  return micro::managed<float>("transpose2d", bytes / sizeof(float));
}

// One butterfly stage along each row: neighbours at distance `span` mix.
__global__ void row_pass(float* m, size_t n, size_t span) {
  for (size_t row = blockIdx.x; row < n; row += gridDim.x) {
    float* x = m + row * n;
    for (size_t i = threadIdx.x; i < n; i += blockDim.x) {
      if ((i & span) || i + span >= n) continue;
      const float a = x[i], b = x[i + span];
      x[i] = 0.5f * (a + b);
      x[i + span] = 0.5f * (a - b);
    }
  }
}

__global__ void transpose(const float* in, float* out, size_t n) {
  __shared__ float tile[kTile][kTile + 1];
  const size_t x = blockIdx.x * size_t(kTile) + threadIdx.x;
  for (size_t by = blockIdx.y; by * kTile < n; by += gridDim.y) {
    for (int j = threadIdx.y; j < kTile; j += blockDim.y) {
      const size_t y = by * kTile + j;
      if (x < n && y < n) tile[j][threadIdx.x] = in[y * n + x];
    }
    __syncthreads();
    const size_t ox = by * kTile + threadIdx.x;
    for (int j = threadIdx.y; j < kTile; j += blockDim.y) {
      const size_t oy = blockIdx.x * size_t(kTile) + j;
      if (ox < n && oy < n) out[oy * n + ox] = tile[threadIdx.x][j];
    }
    __syncthreads();
  }
}

struct Options {
  size_t mib = 1024;
  int steps = 3;
};

Options parse(int argc, char** argv) {
  Options o;
  micro::parse(
      "transpose2d", argc, argv,
      {micro::whole("--mib", o.mib, 8, 1 << 20), micro::whole("--steps", o.steps, 1, 1000000)});
  return o;
}

} // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  size_t n = kTile;
  while (2 * (n + kTile) * (n + kTile) * sizeof(float) <= (o.mib << 20)) n += kTile;
  const size_t bytes = n * n * sizeof(float);
  float* a = managed(bytes);
  float* b = managed(bytes);
  for (size_t i = 0; i < n * n; ++i) a[i] = static_cast<float>((i * 2654435761u) % 1000) * 1e-3f;
  const auto began = std::chrono::steady_clock::now();
  double diagonal = 0;
  const dim3 tiles((n + kTile - 1) / kTile, 256), threads(kTile, 8);
  for (int step = 0; step < o.steps; ++step) {
    check(cudaProfilerStart(), "cudaProfilerStart"); // the range's start, then each step's
    const size_t span = size_t(1) << (step % 10);
    row_pass<<<1024, 256>>>(a, n, span);
    transpose<<<tiles, threads>>>(a, b, n);
    row_pass<<<1024, 256>>>(b, n, span);
    transpose<<<tiles, threads>>>(b, a, n);
    check(cudaDeviceSynchronize(), "transform");
    diagonal = 0;
    for (size_t i = 0; i < n; ++i) diagonal += a[i * n + i];
  }
  check(cudaProfilerStop(), "cudaProfilerStop");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  std::printf("{\"workload\": \"transpose2d\", \"n\": %zu, \"bytes_per_matrix\": %zu, "
              "\"steps\": %d, \"steps_seconds\": %.4f, \"diagonal\": %.6g}\n",
              n, bytes, o.steps, seconds, diagonal);
  check(cudaFree(a), "cudaFree");
  check(cudaFree(b), "cudaFree");
  return 0;
}
