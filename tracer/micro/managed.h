// What the CUDA programs in micro/ share: exit on a CUDA error, and managed memory that is never
// asked for beyond what the GPU has free (less a 2 GiB margin), so no program oversubscribes the
// shared GPU.
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

template <typename T> T* managed(const char* program, size_t count) {
  const size_t bytes = count * sizeof(T);
  size_t free_bytes = 0, total = 0;
  check(program, cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
  if (bytes + (2ull << 30) > free_bytes) {
    std::fprintf(stderr,
                 "%s: refusing %zu managed bytes: the GPU has %zu free and 2 GiB must stay free\n",
                 program, bytes, free_bytes);
    std::exit(1);
  }
  T* p = nullptr;
  check(program, cudaMallocManaged(&p, bytes), "cudaMallocManaged");
  return p;
}

} // namespace micro
