// Issue 60, why programs fault more cheaply than the calibration's benchmark: a program's
// faulting kernels sweep their tensors in waves of thread blocks, several tensors at once, where
// the calibration's touch kernel faults every page at once from one wave. This probe times, on
// pages the host holds, kernels of each shape over the same bytes:
//   touch   one thread per 4 KB page, all pages at once (the calibration's benchmark);
//   sweep1  one tensor read in a grid-wide sweep, four floats a thread (a reduction's shape);
//   sweep3  c = a * b over three tensors of a third each (an elementwise kernel's shape);
//   seq3    the three tensors read by three sweep1 kernels in turn;
// each with its pages written by the host (`host`) or written by a kernel and then evicted one
// 2 MB cudaMemPrefetchAsync to the host each (`evicted`, as a program's budget evicts), and the
// same kernel all-resident (its compute). One line per case: the median of 3 of each, ms, and
// us a 64 KB page beyond the all-resident time.
//   sweep_shape [MIB]   (default 1536: the bytes of all tensors together)
// Refuses where the managed memory asked for would not fit the GPU's free memory.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include <string>
#include <vector>

namespace {

constexpr size_t kBigPage = 64 << 10;
constexpr size_t kChunk = 2 << 20;

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "sweep_shape: %s: %s\n", what, cudaGetErrorString(e));
  std::exit(1);
}

__global__ void touch(float* p, size_t pages4k) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < pages4k) p[i * 1024] += 1.0f;
}

__global__ void sweep1(const float4* a, size_t n4, float* sink) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= n4) return;
  const float4 v = a[i];
  if (v.x + v.y + v.z + v.w == 12345.0f) *sink = 1.0f; // keeps the read
}

__global__ void sweep3(const float4* a, const float4* b, float4* c, size_t n4) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= n4) return;
  const float4 x = a[i], y = b[i];
  c[i] = make_float4(x.x * y.x, x.y * y.y, x.z * y.z, x.w * y.w);
}

__global__ void fill(float* p, size_t n, float v) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[i] = v;
}

struct Probe {
  char* base = nullptr;
  size_t bytes = 0;
  float* sink = nullptr;
  cudaStream_t s{};
  cudaEvent_t e0{}, e1{};
  int dev = 0;

  explicit Probe(size_t b) : bytes(b) {
    check(cudaGetDevice(&dev), "cudaGetDevice");
    size_t free = 0, total = 0;
    check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
    if (bytes + (2ull << 30) > free) {
      std::fprintf(stderr, "sweep_shape: refusing: %zu MiB of managed memory and 2 GiB spare do "
                   "not fit the GPU's %zu MiB free\n", bytes >> 20, free >> 20);
      std::exit(1);
    }
    check(cudaMallocManaged(&base, bytes), "cudaMallocManaged");
    check(cudaMalloc(&sink, sizeof(float)), "cudaMalloc");
    check(cudaStreamCreate(&s), "cudaStreamCreate");
    check(cudaEventCreate(&e0), "cudaEventCreate");
    check(cudaEventCreate(&e1), "cudaEventCreate");
  }

  void to_gpu() {
    cudaMemLocation gpu{cudaMemLocationTypeDevice, dev};
    check(cudaMemPrefetchAsync(base, bytes, gpu, 0, s), "prefetch to the GPU");
    check(cudaStreamSynchronize(s), "sync");
  }
  // The pages on the host, as `origin` says: written by the host, or written by a kernel and
  // evicted a 2 MB call each.
  void to_host(bool evicted) {
    if (!evicted) {
      for (size_t off = 0; off < bytes; off += 4096) base[off] = 1;
      return;
    }
    to_gpu();
    fill<<<1024, 256, 0, s>>>(reinterpret_cast<float*>(base), bytes / 4, 1.0f);
    cudaMemLocation host{cudaMemLocationTypeHost, 0};
    for (size_t off = 0; off < bytes; off += kChunk)
      check(cudaMemPrefetchAsync(base + off, std::min(kChunk, bytes - off), host, 0, s),
            "eviction");
    check(cudaStreamSynchronize(s), "sync");
  }

  template <class Launch> float timed(Launch launch) {
    check(cudaEventRecord(e0, s), "record");
    launch();
    check(cudaEventRecord(e1, s), "record");
    check(cudaEventSynchronize(e1), "kernel");
    check(cudaGetLastError(), "launch");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
    return ms;
  }

  void run_shape(const std::string& shape) {
    const size_t third = bytes / 3 / kChunk * kChunk;
    float* f = reinterpret_cast<float*>(base);
    if (shape == "touch") {
      const size_t pages4k = bytes / 4096;
      touch<<<(pages4k + 255) / 256, 256, 0, s>>>(f, pages4k);
    } else if (shape == "sweep1") {
      const size_t n4 = bytes / 16;
      sweep1<<<(n4 + 127) / 128, 128, 0, s>>>(reinterpret_cast<float4*>(base), n4, sink);
    } else if (shape == "sweep3") {
      const size_t n4 = third / 16;
      sweep3<<<(n4 + 127) / 128, 128, 0, s>>>(
          reinterpret_cast<float4*>(base), reinterpret_cast<float4*>(base + third),
          reinterpret_cast<float4*>(base + 2 * third), n4);
    } else { // seq3
      const size_t n4 = third / 16;
      for (int t = 0; t < 3; ++t)
        sweep1<<<(n4 + 127) / 128, 128, 0, s>>>(reinterpret_cast<float4*>(base + t * third), n4,
                                                 sink);
    }
  }

  size_t pages(const std::string& shape) const {
    const size_t third = bytes / 3 / kChunk * kChunk;
    return (shape == "sweep3" || shape == "seq3" ? 3 * third : bytes) / kBigPage;
  }
};

float median3(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
  const size_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1536;
  if (mib < 6 || mib % 6 != 0) {
    std::fprintf(stderr, "usage: sweep_shape [MIB]  (a multiple of 6, at least 6)\n");
    return 2;
  }
  Probe p(mib << 20);
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, p.dev), "cudaGetDeviceProperties");
  std::printf("device: %s, %zu MiB\n", prop.name, mib);
  for (const char* shape : {"touch", "sweep1", "sweep3", "seq3"}) {
    std::vector<float> resident;
    for (int r = 0; r < 3; ++r) {
      p.to_gpu();
      resident.push_back(p.timed([&] { p.run_shape(shape); }));
    }
    const float compute = median3(resident);
    for (const bool evicted : {false, true}) {
      std::vector<float> t;
      for (int r = 0; r < 3; ++r) {
        p.to_host(evicted);
        t.push_back(p.timed([&] { p.run_shape(shape); }));
      }
      const float ms = median3(t);
      std::printf("shape %-6s origin %-7s %9.2f ms  resident %7.3f ms  %6.2f us a 64 KB page  "
                  "(runs %.2f %.2f %.2f)\n",
                  shape, evicted ? "evicted" : "host", ms, compute,
                  (ms - compute) * 1000.0 / static_cast<double>(p.pages(shape)), t[0], t[1], t[2]);
      std::fflush(stdout);
    }
  }
  return 0;
}
