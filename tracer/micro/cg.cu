// Conjugate gradients on a sparse symmetric positive definite matrix in CSR form, on managed
// memory: each iteration streams the whole matrix once (the product) and reuses four vectors in
// several small kernels (dot products, updates), the product gathering from seven places of the
// vector at once (around the row, and W, far1 and far2 rows away on each side). A hold-out
// program of the live fidelity report (experiments/live/holdout/): never used to tune the model.
//
//   cg [--mib N] [--steps S] [--iterations K]
//
// The matrix: 9 entries a row, 9 on the diagonal and -1 at distances 1, W (a 2D grid's row) and
// two far strides, each both ways (so symmetric and diagonally dominant). A kernel builds it; the
// host writes the right-hand side. Each step, inside a profiler range (cudaProfilerStart marks
// each step's start): K iterations, then the host reads the residual. N MiB is the matrix and
// the vectors together. Prints one JSON line.
#include "tracer/micro/managed.h"
#include "tracer/micro/options.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

namespace {

constexpr int kPerRow = 9;
constexpr int kThreads = 256;
constexpr int kDotBlocks = 1024;

void check(cudaError_t status, const char* what) {
  micro::check("cg", status, what);
}

struct Matrix {
  size_t n = 0;
  uint64_t* row = nullptr; // n + 1 offsets
  uint32_t* col = nullptr;
  float* val = nullptr;
};

// The scalars every iteration reads and writes, kept on the GPU: no host round trip.
struct Scalars {
  double rr = 0, rr_next = 0, pap = 0;
  double partial[kDotBlocks];
};

__global__ void build(Matrix a, size_t width, size_t far1, size_t far2) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < a.n;
       i += size_t(gridDim.x) * blockDim.x) {
    const size_t base = i * kPerRow;
    const size_t step[4] = {1, width, far1, far2};
    a.row[i] = base;
    a.col[base] = static_cast<uint32_t>(i);
    a.val[base] = 9.0f;
    for (int k = 0; k < 4; ++k) { // (i + s) and (i - s) modulo n: symmetric by construction
      a.col[base + 1 + 2 * k] = static_cast<uint32_t>((i + step[k]) % a.n);
      a.col[base + 2 + 2 * k] = static_cast<uint32_t>((i + a.n - step[k]) % a.n);
      a.val[base + 1 + 2 * k] = -1.0f;
      a.val[base + 2 + 2 * k] = -1.0f;
    }
    if (i + 1 == a.n) a.row[a.n] = a.n * kPerRow;
  }
}

__global__ void spmv(Matrix a, const float* x, float* y) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < a.n;
       i += size_t(gridDim.x) * blockDim.x) {
    float sum = 0;
    for (uint64_t k = a.row[i]; k < a.row[i + 1]; ++k) sum += a.val[k] * x[a.col[k]];
    y[i] = sum;
  }
}

// partial[block] = this block's share of x . y; the last kernel of the pair adds them.
__global__ void dot(const float* x, const float* y, size_t n, Scalars* s) {
  __shared__ double sums[kThreads];
  double sum = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    sum += double(x[i]) * y[i];
  sums[threadIdx.x] = sum;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) sums[threadIdx.x] += sums[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) s->partial[blockIdx.x] = sums[0];
}

__global__ void total(Scalars* s, double* into) {
  __shared__ double sums[kThreads];
  double sum = 0;
  for (int b = threadIdx.x; b < kDotBlocks; b += kThreads) sum += s->partial[b];
  sums[threadIdx.x] = sum;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) sums[threadIdx.x] += sums[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) *into = sums[0];
}

// x += alpha p, r -= alpha Ap, with alpha = rr / pAp.
__global__ void update(float* x, float* r, const float* p, const float* ap, size_t n,
                       const Scalars* s) {
  const float alpha = static_cast<float>(s->rr / s->pap);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    x[i] += alpha * p[i];
    r[i] -= alpha * ap[i];
  }
}

// p = r + beta p, with beta = rr_next / rr (advance() then moves rr_next to rr: a kernel of its
// own, so that no block reads rr after another has changed it).
__global__ void direction(float* p, const float* r, size_t n, const Scalars* s) {
  const float beta = static_cast<float>(s->rr_next / s->rr);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    p[i] = r[i] + beta * p[i];
}

__global__ void advance(Scalars* s) {
  s->rr = s->rr_next;
}

// to = from, or 0 where from is null.
__global__ void copy(float* to, const float* from, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    to[i] = from ? from[i] : 0.0f;
}

struct Options {
  size_t mib = 1024;
  int steps = 3;
  int iterations = 4;
};

Options parse(int argc, char** argv) {
  Options o; // more than 32 GiB would overflow the 32-bit column indices
  micro::parse("cg", argc, argv,
               {micro::whole("--mib", o.mib, 8, 32768),
                micro::whole("--steps", o.steps, 1, 1000000),
                micro::whole("--iterations", o.iterations, 1, 1000000)});
  return o;
}

} // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  // A row: its offset, 9 columns and 9 values, and one float in each of b, x, r, p and Ap.
  const size_t row_bytes =
      sizeof(uint64_t) + kPerRow * (sizeof(uint32_t) + sizeof(float)) + 5 * sizeof(float);
  Matrix a;
  a.n = (o.mib << 20) / row_bytes;
  const size_t width = static_cast<size_t>(std::sqrt(static_cast<double>(a.n)));
  a.row = micro::managed<uint64_t>("cg", a.n + 1);
  a.col = micro::managed<uint32_t>("cg", a.n * kPerRow);
  a.val = micro::managed<float>("cg", a.n * kPerRow);
  float* b = micro::managed<float>("cg", a.n);
  float* x = micro::managed<float>("cg", a.n);
  float* r = micro::managed<float>("cg", a.n);
  float* p = micro::managed<float>("cg", a.n);
  float* ap = micro::managed<float>("cg", a.n);
  Scalars* s = micro::managed<Scalars>("cg", 1);
  build<<<1024, kThreads>>>(a, width, a.n / 3 + 17, a.n / 7 + 5);
  check(cudaDeviceSynchronize(), "build");
  for (size_t i = 0; i < a.n; ++i) b[i] = 1.0f + static_cast<float>((i * 40503u) % 7) * 0.25f;
  const auto began = std::chrono::steady_clock::now();
  double residual = 0;
  const unsigned grid = 1024;
  for (int step = 0; step < o.steps; ++step) {
    check(cudaProfilerStart(), "cudaProfilerStart"); // the range's start, then each step's
    // Start from x = 0: r = p = b, rr = b . b.
    copy<<<grid, kThreads>>>(x, nullptr, a.n);
    copy<<<grid, kThreads>>>(r, b, a.n);
    copy<<<grid, kThreads>>>(p, b, a.n);
    dot<<<kDotBlocks, kThreads>>>(r, r, a.n, s);
    total<<<1, kThreads>>>(s, &s->rr);
    for (int k = 0; k < o.iterations; ++k) {
      spmv<<<grid, kThreads>>>(a, p, ap);
      dot<<<kDotBlocks, kThreads>>>(p, ap, a.n, s);
      total<<<1, kThreads>>>(s, &s->pap);
      update<<<grid, kThreads>>>(x, r, p, ap, a.n, s);
      dot<<<kDotBlocks, kThreads>>>(r, r, a.n, s);
      total<<<1, kThreads>>>(s, &s->rr_next);
      direction<<<grid, kThreads>>>(p, r, a.n, s);
      advance<<<1, 1>>>(s);
    }
    check(cudaDeviceSynchronize(), "iterations");
    residual = std::sqrt(s->rr);
  }
  check(cudaProfilerStop(), "cudaProfilerStop");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  std::printf("{\"workload\": \"cg\", \"rows\": %zu, \"nonzeros\": %zu, \"iterations\": %d, "
              "\"steps\": %d, \"steps_seconds\": %.4f, \"residual\": %.6g}\n",
              a.n, a.n * kPerRow, o.iterations, o.steps, seconds, residual);
  for (void* q : {static_cast<void*>(a.row), static_cast<void*>(a.col), static_cast<void*>(a.val),
                  static_cast<void*>(b), static_cast<void*>(x), static_cast<void*>(r),
                  static_cast<void*>(p), static_cast<void*>(ap), static_cast<void*>(s)})
    check(cudaFree(q), "cudaFree");
  return std::isfinite(residual) ? 0 : 1;
}
