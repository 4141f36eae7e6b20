// An iterative Jacobi solver on managed memory whose data the host initialises, changes and
// reads back: the kind of program whose traffic between host and GPU a trace must hold.
//
//   host_stencil [--mib N] [--steps S] [--sweeps K] [--odd]
//
// The host fills the grid u and the right-hand side f (every page written on the host); then
// each step, inside a profiler range (cudaProfilerStart marks each step's start): the host
// rewrites f's first and last rows, K Jacobi sweeps run between u and v on the GPU, and the host
// reads every 8th row of u to estimate the residual. --odd makes each row one float longer, so
// no array is a multiple of 4 KB. N MiB is split over u, v and f. Prints one JSON line.
#include "tracer/micro/managed.h"
#include "tracer/micro/options.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

namespace {

void check(cudaError_t status, const char* what) {
  micro::check("host_stencil", status, what);
}

float* managed(size_t bytes) {
  return micro::managed<float>("host_stencil", bytes / sizeof(float));
}

__global__ void jacobi(const float* u, const float* f, float* v, size_t rows, size_t cols) {
  const size_t c = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  for (size_t r = blockIdx.y + 1; r + 1 < rows; r += gridDim.y) {
    if (c == 0 || c + 1 >= cols) continue;
    const size_t i = r * cols + c;
    v[i] = 0.25f * (u[i - 1] + u[i + 1] + u[i - cols] + u[i + cols] - f[i]);
  }
}

struct Options {
  size_t mib = 768;
  int steps = 4, sweeps = 6;
  bool odd = false;
};

Options parse(int argc, char** argv) {
  Options o;
  micro::parse("host_stencil", argc, argv,
               {micro::whole("--mib", o.mib, 3, 1 << 20),
                micro::whole("--steps", o.steps, 1, 1000000),
                micro::whole("--sweeps", o.sweeps, 1, 1000000), micro::flag("--odd", o.odd)});
  return o;
}

} // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const size_t cols = 4096 + (o.odd ? 1 : 0);
  const size_t rows = (o.mib << 20) / 3 / (4096 * sizeof(float));
  const size_t n = rows * cols, bytes = n * sizeof(float);
  float* u = managed(bytes);
  float* v = managed(bytes);
  float* f = managed(bytes);
  for (size_t i = 0; i < n; ++i) {
    u[i] = 0.0f;
    f[i] = static_cast<float>((i * 2654435761u) % 1000) * 1e-3f;
  }
  const auto began = std::chrono::steady_clock::now();
  double residual = 0;
  const dim3 block(256), grid((cols + 255) / 256, 256);
  for (int step = 0; step < o.steps; ++step) {
    check(cudaProfilerStart(), "cudaProfilerStart"); // the range's start, then each step's
    for (size_t c = 0; c < cols; ++c) f[c] = f[(rows - 1) * cols + c] = 1.0f + step;
    for (int k = 0; k < o.sweeps; ++k) {
      jacobi<<<grid, block>>>(u, f, v, rows, cols);
      std::swap(u, v);
    }
    check(cudaDeviceSynchronize(), "jacobi");
    residual = 0;
    for (size_t r = 1; r + 1 < rows; r += 8)
      for (size_t c = 1; c + 1 < cols; ++c) residual += u[r * cols + c];
  }
  check(cudaProfilerStop(), "cudaProfilerStop");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  std::printf("{\"workload\": \"host-stencil\", \"bytes_per_array\": %zu, \"rows\": %zu, "
              "\"cols\": %zu, \"steps\": %d, \"sweeps\": %d, \"steps_seconds\": %.4f, "
              "\"checksum\": %.6g}\n",
              bytes, rows, cols, o.steps, o.sweeps, seconds, residual);
  check(cudaFree(u), "cudaFree");
  check(cudaFree(v), "cudaFree");
  check(cudaFree(f), "cudaFree");
  return 0;
}
