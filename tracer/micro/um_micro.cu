// Unified-memory microbenchmarks whose access sets are known exactly, to check the tracer.
//
//   um_micro stream  --mib N --iterations I --expect FILE
//   um_micro strided --mib N --stride-kib S --iterations I --expect FILE
//
// stream: fill A; copy A to B; scale B in place; memset A; copy a host buffer into B's first
// half. strided: each kernel touches one 4-byte word every S KiB of C, starting at a different
// offset per kernel, through an interior pointer and through a pointer packed in a struct.
// Each iteration begins with cudaProfilerStart, which faultline capture takes as a step mark.
// Both write the access set they must produce, one entry per operation in launch order, as
// {"allocations": [sizes], "operations": [{"name", "pages": [[alloc, first, last, step], ...]}]}
// with pages counted in 64 KB big pages from the allocation's base.
#include "tracer/micro/managed.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <string>
#include <vector>

namespace {

constexpr size_t kBigPage = 64 * 1024;

void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  std::fprintf(stderr, "um_micro: %s: %s\n", what, cudaGetErrorString(status));
  std::exit(1);
}

struct Pages {
  int alloc;
  size_t first, last, step;
};

struct Operation {
  std::string name;
  std::vector<Pages> pages;
};

struct Options {
  std::string pattern;
  size_t bytes = 512ull << 20;
  size_t stride = 192 * 1024;
  int iterations = 2;
  std::string expect_path;
};

Options parse(int argc, char** argv) {
  Options o;
  if (argc < 2) {
    std::fprintf(stderr, "usage: um_micro stream|strided [--mib N] [--stride-kib S] "
                         "[--iterations I] [--expect FILE]\n");
    std::exit(2);
  }
  o.pattern = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string key = argv[i];
    const char* value = argv[i + 1];
    if (key == "--mib")
      o.bytes = std::strtoull(value, nullptr, 10) << 20;
    else if (key == "--stride-kib")
      o.stride = std::strtoull(value, nullptr, 10) << 10;
    else if (key == "--iterations")
      o.iterations = std::atoi(value);
    else if (key == "--expect")
      o.expect_path = value;
    else {
      std::fprintf(stderr, "um_micro: unknown option %s\n", key.c_str());
      std::exit(2);
    }
  }
  if (o.pattern != "stream" && o.pattern != "strided") {
    std::fprintf(stderr, "um_micro: pattern %s; expected stream or strided\n", o.pattern.c_str());
    std::exit(2);
  }
  return o;
}

// Never ask for more managed memory than the GPU has free (micro/managed.h).
float* managed(size_t bytes) {
  return micro::managed<float>("um_micro", (bytes + sizeof(float) - 1) / sizeof(float));
}

__global__ void fill(float* a, size_t n, float value) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += gridDim.x * size_t(blockDim.x))
    a[i] = value;
}

__global__ void copy(const float* a, float* b, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += gridDim.x * size_t(blockDim.x))
    b[i] = a[i];
}

__global__ void scale(float* b, size_t n, float factor) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += gridDim.x * size_t(blockDim.x))
    b[i] *= factor;
}

struct Strided {
  float* base;
  size_t count;
  size_t stride_words;
};

// Touches base[k * stride_words] for k < count; `base` is an interior pointer.
__global__ void touch_strided(float* base, size_t count, size_t stride_words) {
  for (size_t k = blockIdx.x * size_t(blockDim.x) + threadIdx.x; k < count;
       k += gridDim.x * size_t(blockDim.x))
    base[k * stride_words] += 1.0f;
}

__global__ void touch_strided_struct(Strided s) {
  for (size_t k = blockIdx.x * size_t(blockDim.x) + threadIdx.x; k < s.count;
       k += gridDim.x * size_t(blockDim.x))
    s.base[k * s.stride_words] += 1.0f;
}

Pages whole(int alloc, size_t bytes) {
  return {alloc, 0, (bytes - 1) / kBigPage, 1};
}

std::vector<Operation> run_stream(const Options& o, std::vector<size_t>& sizes) {
  size_t n = o.bytes / sizeof(float);
  float* a = managed(o.bytes);
  float* b = managed(o.bytes);
  sizes = {o.bytes, o.bytes};
  std::vector<float> host(n / 2, 3.0f);
  std::vector<Operation> ops;
  for (int it = 0; it < o.iterations; ++it) {
    check(cudaProfilerStart(), "cudaProfilerStart"); // marks a step for faultline capture
    fill<<<1024, 256>>>(a, n, 1.0f);
    ops.push_back({"fill", {whole(0, o.bytes)}});
    copy<<<1024, 256>>>(a, b, n);
    ops.push_back({"copy", {whole(0, o.bytes), whole(1, o.bytes)}});
    scale<<<1024, 256>>>(b, n, 2.0f);
    ops.push_back({"scale", {whole(1, o.bytes)}});
    check(cudaMemset(a, 0, o.bytes), "cudaMemset");
    ops.push_back({"[memset]", {whole(0, o.bytes)}});
    check(cudaMemcpy(b, host.data(), o.bytes / 2, cudaMemcpyHostToDevice), "cudaMemcpy");
    ops.push_back({"[memcpy HtoD]", {whole(1, o.bytes / 2)}});
    check(cudaDeviceSynchronize(), "kernel");
  }
  check(cudaFree(a), "cudaFree");
  check(cudaFree(b), "cudaFree");
  return ops;
}

std::vector<Operation> run_strided(const Options& o, std::vector<size_t>& sizes) {
  float* c = managed(o.bytes);
  sizes = {o.bytes};
  std::vector<Operation> ops;
  size_t stride_words = o.stride / sizeof(float);
  for (int it = 0; it < o.iterations; ++it) {
    check(cudaProfilerStart(), "cudaProfilerStart"); // marks a step for faultline capture
    for (int shift = 0; shift < 3; ++shift) {
      size_t start = size_t(shift) * kBigPage + 4096 * size_t(it);
      size_t count = (o.bytes - start + o.stride - 1) / o.stride;
      Pages pages{0, start / kBigPage, (start + (count - 1) * o.stride) / kBigPage,
                  o.stride / kBigPage};
      if (shift == 1) {
        touch_strided_struct<<<256, 256>>>(Strided{c + start / sizeof(float), count, stride_words});
        ops.push_back({"touch_strided_struct", {pages}});
      } else {
        touch_strided<<<256, 256>>>(c + start / sizeof(float), count, stride_words);
        ops.push_back({"touch_strided", {pages}});
      }
    }
    check(cudaDeviceSynchronize(), "kernel");
  }
  check(cudaFree(c), "cudaFree");
  return ops;
}

void write_expectation(const std::string& path, const std::vector<size_t>& sizes,
                       const std::vector<Operation>& ops) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "um_micro: cannot write %s\n", path.c_str());
    std::exit(1);
  }
  std::fprintf(f, "{\"allocations\": [");
  for (size_t i = 0; i < sizes.size(); ++i) std::fprintf(f, "%s%zu", i ? ", " : "", sizes[i]);
  std::fprintf(f, "],\n \"operations\": [\n");
  for (size_t i = 0; i < ops.size(); ++i) {
    std::fprintf(f, "  {\"name\": \"%s\", \"pages\": [", ops[i].name.c_str());
    for (size_t j = 0; j < ops[i].pages.size(); ++j) {
      const Pages& p = ops[i].pages[j];
      std::fprintf(f, "%s[%d, %zu, %zu, %zu]", j ? ", " : "", p.alloc, p.first, p.last, p.step);
    }
    std::fprintf(f, "]}%s\n", i + 1 < ops.size() ? "," : "");
  }
  std::fprintf(f, "]}\n");
  std::fclose(f);
}

} // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  if (o.stride % kBigPage != 0) {
    std::fprintf(stderr, "um_micro: --stride-kib must be a multiple of 64\n");
    return 2;
  }
  std::vector<size_t> sizes;
  std::vector<Operation> ops = o.pattern == "stream" ? run_stream(o, sizes) : run_strided(o, sizes);
  if (!o.expect_path.empty()) write_expectation(o.expect_path, sizes, ops);
  std::printf("um_micro %s: %zu operations over %zu MiB\n", o.pattern.c_str(), ops.size(),
              o.bytes >> 20);
  return 0;
}
