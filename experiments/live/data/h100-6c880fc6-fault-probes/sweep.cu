// Fault cost of a dense sweep (as an elementwise kernel reads its input) against the
// calibration's touch kernel (one thread per 4 KB, every page at once), on host-written data.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

__global__ void sweep(const float4* in, float4* out, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    float4 v = in[i]; v.x *= 2; out[i] = v;
  }
}
__global__ void sweep_read(const float4* in, float* sink, size_t n) {
  float acc = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) acc += in[i].x;
  if (acc == 12345.f) *sink = acc;
}
__global__ void touch(char* p, size_t pages4k, unsigned* sink) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < pages4k) { unsigned v = *(volatile unsigned*)(p + i * 4096); if (v == 12345u) *sink = v; }
}
int main(int argc, char** argv) {
  size_t mb = argc > 1 ? atoll(argv[1]) : 512;
  size_t bytes = mb << 20;
  size_t free_b, total; CK(cudaMemGetInfo(&free_b, &total));
  if (3 * bytes + (2ull << 30) > free_b) { printf("refused: %zu MB of managed memory asked, %zu MB free\n", 3 * bytes >> 20, free_b >> 20); return 2; }
  float* sink; CK(cudaMalloc(&sink, 64));
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  auto run = [&](int kind) {
    char *x, *y; CK(cudaMallocManaged(&x, bytes)); CK(cudaMallocManaged(&y, bytes));
    memset(x, 1, bytes);                       // host-written input
    if (kind == 1) memset(y, 1, bytes);        // output host-written too (migrates)
    // warm the fault path with a fresh page
    char* s; CK(cudaMallocManaged(&s, 1 << 21)); touch<<<1, 1>>>(s, 1, (unsigned*)sink); CK(cudaDeviceSynchronize());
    cudaEventRecord(a);
    size_t n = bytes / 16;
    if (kind <= 1) sweep<<<132 * 8, 256>>>((float4*)x, (float4*)y, n);
    else if (kind == 2) sweep_read<<<132 * 8, 256>>>((float4*)x, sink, n);
    else touch<<<(bytes / 4096 + 255) / 256, 256>>>(x, bytes / 4096, (unsigned*)sink);
    cudaEventRecord(b); CK(cudaEventSynchronize(b));
    float ms; cudaEventElapsedTime(&ms, a, b);
    cudaFree(x); cudaFree(y); cudaFree(s);
    return ms;
  };
  const char* names[] = {"sweep in->fresh out", "sweep in->host out", "sweep read only", "touch (calibration)"};
  std::vector<float> t[4];
  for (int r = 0; r < 5; ++r) for (int k = 0; k < 4; ++k) t[k].push_back(run(k));
  size_t pages = bytes >> 16;
  for (int k = 0; k < 4; ++k) {
    std::sort(t[k].begin(), t[k].end());
    printf("%-22s %zu MB: median %.2f ms (min %.2f max %.2f): %.2f us per 64 KB of input\n", names[k], mb, t[k][2], t[k][0], t[k][4], t[k][2] * 1e3 / pages);
  }
}
