// What the CUDA programs in micro/ share: exit on a CUDA error, and managed memory that is never
// asked for beyond what the GPU has free (less a 2 GiB margin, all allocations together), so no
// program oversubscribes the shared GPU.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

namespace micro {

inline void check(const char* program, cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  std::fprintf(stderr, "%s: %s: %s\n", program, what, cudaGetErrorString(status));
  std::exit(1);
}

// The managed bytes this program has asked for so far: cudaMemGetInfo counts managed memory only
// once it is touched, so the total is held against what is free, not each allocation alone.
inline size_t& managed_so_far() {
  static size_t total = 0;
  return total;
}

template <typename T> T* managed(const char* program, size_t count) {
  const size_t bytes = count * sizeof(T);
  size_t free_bytes = 0, total = 0;
  check(program, cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
  if (managed_so_far() + bytes + (2ull << 30) > free_bytes) {
    std::fprintf(stderr,
                 "%s: refusing %zu more managed bytes (%zu asked for already): the GPU has %zu "
                 "free and 2 GiB must stay free\n",
                 program, bytes, managed_so_far(), free_bytes);
    std::exit(1);
  }
  T* p = nullptr;
  check(program, cudaMallocManaged(&p, bytes), "cudaMallocManaged");
  managed_so_far() += bytes;
  return p;
}

} // namespace micro
