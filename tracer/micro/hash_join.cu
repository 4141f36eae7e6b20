// A GPU hash join on managed memory: the build side R goes into an open-addressing hash table,
// the probe side S looks every key up. Scattered writes and reads over the whole table in every
// kernel, the access pattern of databases on GPUs, and unlike any shipped trace. A hold-out
// program of the live fidelity report (experiments/live/holdout/): never used to tune the model.
//
//   hash_join [--mib N] [--steps S]
//
// The host fills R and S (every page written on the host). Each step, inside a profiler range
// (cudaProfilerStart marks each step's start): the host writes a new eighth of S (a new batch of
// probes), the GPU clears the table, builds it from R and probes it with S, and the host reads the
// match count. N MiB is split over R (8 bytes a tuple), S (2 tuples per R tuple) and the table
// (2 slots per R tuple). Prints one JSON line.
#include "tracer/micro/managed.h"
#include "tracer/micro/options.h"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

namespace {

constexpr uint32_t kEmpty = 0xffffffffu;

void check(cudaError_t status, const char* what) {
  micro::check("hash_join", status, what);
}

template <typename T> T* managed(size_t count) {
  return micro::managed<T>("hash_join", count);
}

__host__ __device__ uint32_t mix(uint32_t k) {
  k ^= k >> 16;
  k *= 0x7feb352du;
  k ^= k >> 15;
  k *= 0x846ca68bu;
  return k ^ (k >> 16);
}

__global__ void clear(uint2* table, size_t slots) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < slots;
       i += size_t(gridDim.x) * blockDim.x)
    table[i] = make_uint2(kEmpty, 0);
}

__global__ void build(const uint2* r, size_t n, uint2* table, size_t slots) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const uint2 t = r[i];
    for (size_t s = mix(t.x) % slots;; s = (s + 1) % slots) {
      if (atomicCAS(&table[s].x, kEmpty, t.x) == kEmpty) {
        table[s].y = t.y;
        break;
      }
    }
  }
}

__global__ void probe(const uint2* s_rel, size_t n, const uint2* table, size_t slots,
                      unsigned long long* matches) {
  unsigned long long found = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const uint32_t key = s_rel[i].x;
    for (size_t s = mix(key) % slots; table[s].x != kEmpty; s = (s + 1) % slots)
      if (table[s].x == key) ++found;
  }
  atomicAdd(matches, found);
}

struct Options {
  size_t mib = 1024;
  int steps = 3;
};

Options parse(int argc, char** argv) {
  Options o;
  micro::parse(
      "hash_join", argc, argv,
      {micro::whole("--mib", o.mib, 8, 1 << 20), micro::whole("--steps", o.steps, 1, 1000000)});
  return o;
}

} // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const size_t n_r = (o.mib << 20) / (5 * sizeof(uint2)), n_s = 2 * n_r, slots = 2 * n_r;
  uint2* r = managed<uint2>(n_r);
  uint2* s = managed<uint2>(n_s);
  uint2* table = managed<uint2>(slots);
  auto* matches = managed<unsigned long long>(1);
  // Keys of R are distinct; half of S's keys are R's, the others miss.
  for (size_t i = 0; i < n_r; ++i) r[i] = make_uint2(mix(uint32_t(i)), uint32_t(i));
  const auto fill_s = [&](size_t from, size_t to, uint32_t salt) {
    for (size_t i = from; i < to; ++i) {
      const uint32_t j = mix(uint32_t(i) ^ salt);
      s[i] = make_uint2(j % 2 ? mix(j % uint32_t(n_r)) : mix(uint32_t(n_r) + j), uint32_t(i));
    }
  };
  fill_s(0, n_s, 0);
  const auto began = std::chrono::steady_clock::now();
  unsigned long long total = 0;
  for (int step = 0; step < o.steps; ++step) {
    check(cudaProfilerStart(), "cudaProfilerStart"); // the range's start, then each step's
    const size_t batch = n_s / 8, from = (step % 8) * batch;
    fill_s(from, from + batch, uint32_t(step + 1));
    *matches = 0;
    clear<<<1024, 256>>>(table, slots);
    build<<<1024, 256>>>(r, n_r, table, slots);
    probe<<<1024, 256>>>(s, n_s, table, slots, matches);
    check(cudaDeviceSynchronize(), "hash join");
    total += *matches;
  }
  check(cudaProfilerStop(), "cudaProfilerStop");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  std::printf("{\"workload\": \"hash-join\", \"build_tuples\": %zu, \"probe_tuples\": %zu, "
              "\"slots\": %zu, \"steps\": %d, \"steps_seconds\": %.4f, \"matches\": %llu}\n",
              n_r, n_s, slots, o.steps, seconds, total);
  check(cudaFree(r), "cudaFree");
  check(cudaFree(s), "cudaFree");
  check(cudaFree(table), "cudaFree");
  check(cudaFree(matches), "cudaFree");
  return 0;
}
