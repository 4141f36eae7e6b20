// libfaultline_alloc.so: the allocator models of sim/alloc run live, as a PyTorch pluggable
// allocator (torch.cuda.memory.CUDAPluggableAllocator), over the CUDA virtual memory API. The
// same model code decides; this file only supplies the driver calls and PyTorch's entry points.
//
// Environment: FAULTLINE_ALLOC_MODEL (gmlake, caching or expandable; default gmlake),
// FAULTLINE_ALLOC_LIMIT (bytes of physical memory the allocator may hold; required, and at most
// the GPU's free memory at the first allocation less 1 GiB), FAULTLINE_ALLOC_FRAG_LIMIT (bytes)
// and FAULTLINE_ALLOC_REUSE_LIMIT (GMLake's fragLimit and reuseLimit).
//
// PyTorch does not check what a pluggable allocator returns, so out of memory cannot be a null
// pointer: the library throws std::runtime_error("... out of memory ..."), which PyTorch passes
// on to Python as a RuntimeError.
#include "sim/alloc/allocator.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <sys/types.h>
#include <unistd.h>

namespace faultline::alloc {
namespace {

constexpr Bytes kFreeMargin = Bytes{1} << 30;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "faultline_alloc: %s\n", what.c_str());
  std::fflush(stderr);
  _exit(2);
}

void check(CUresult r, const char* call) {
  if (r == CUDA_SUCCESS) return;
  const char* name = nullptr;
  cuGetErrorName(r, &name);
  die(std::string(call) + " failed: " + (name != nullptr ? name : "unknown error"));
}

Bytes env_bytes(const char* name, Bytes fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const unsigned long long x = std::strtoull(v, &end, 10);
  if (*end != '\0') die(std::string(name) + "=" + v + ": expected a whole number of bytes");
  return x;
}

class CudaDriver : public Driver {
public:
  CudaDriver(int device, Bytes limit) : limit_(limit) {
    prop_.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop_.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop_.location.id = device;
    access_.location = prop_.location;
    access_.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  }
  void synchronize() override {
    if (cudaDeviceSynchronize() != cudaSuccess) die("cudaDeviceSynchronize failed");
  }

protected:
  bool over_limit(Bytes size) const { return physical_bytes() + size > limit_; }
  Addr do_malloc(Bytes size) override {
    void* p = nullptr;
    if (over_limit(size) || cudaMalloc(&p, size) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return reinterpret_cast<Addr>(p);
  }
  void do_free(Addr address, Bytes) override {
    if (cudaFree(reinterpret_cast<void*>(address)) != cudaSuccess) die("cudaFree failed");
  }
  Handle do_create(Bytes size) override {
    CUmemGenericAllocationHandle h = 0;
    if (over_limit(size)) return 0;
    const CUresult r = cuMemCreate(&h, size, &prop_, 0);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) return 0;
    check(r, "cuMemCreate");
    return h;
  }
  void do_release(Handle handle, Bytes) override { check(cuMemRelease(handle), "cuMemRelease"); }
  Addr do_reserve(Bytes size) override {
    CUdeviceptr p = 0;
    check(cuMemAddressReserve(&p, size, kBlockSize, 0, 0), "cuMemAddressReserve");
    return p;
  }
  void do_unreserve(Addr address, Bytes size) override {
    check(cuMemAddressFree(address, size), "cuMemAddressFree");
  }
  void do_map(Addr address, Bytes size, Handle handle) override {
    check(cuMemMap(address, size, 0, handle, 0), "cuMemMap");
    check(cuMemSetAccess(address, size, &access_, 1), "cuMemSetAccess");
  }
  void do_unmap(Addr address, Bytes size) override {
    check(cuMemUnmap(address, size), "cuMemUnmap");
  }

private:
  Bytes limit_;
  CUmemAllocationProp prop_{};
  CUmemAccessDesc access_{};
};

struct LiveBlock {
  Bytes size = 0, requested = 0;
};

// One device's allocator, created at its first allocation.
struct DeviceState {
  std::unique_ptr<CudaDriver> driver;
  std::unique_ptr<Allocator> model;
  std::map<Addr, LiveBlock> live;
  Usage usage;
};

std::mutex g_mutex;
std::map<int, DeviceState> g_devices;
std::string g_model;

Options options_from_env() {
  Options o;
  o.frag_limit = env_bytes("FAULTLINE_ALLOC_FRAG_LIMIT", o.frag_limit);
  o.reuse_limit = env_bytes("FAULTLINE_ALLOC_REUSE_LIMIT", o.reuse_limit);
  return o;
}

DeviceState& state_for(int device) {
  auto it = g_devices.find(device);
  if (it != g_devices.end()) return it->second;
  const char* model = std::getenv("FAULTLINE_ALLOC_MODEL");
  g_model = model != nullptr && *model != '\0' ? model : "gmlake";
  size_t free_bytes = 0, total = 0;
  if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) die("cudaMemGetInfo failed");
  const Bytes limit = env_bytes("FAULTLINE_ALLOC_LIMIT", 0);
  if (limit == 0) die("FAULTLINE_ALLOC_LIMIT is not set: give the bytes the allocator may hold");
  if (limit + kFreeMargin > free_bytes)
    die("refusing a limit of " + std::to_string(limit) + " bytes: the GPU has " +
        std::to_string(free_bytes) + " bytes free and 1 GiB must stay free");
  DeviceState& s = g_devices[device];
  s.driver = std::make_unique<CudaDriver>(device, limit);
  Options options = options_from_env();
  options.segment_va = total + total / 8;
  try {
    s.model = make_allocator(g_model, options, *s.driver);
  } catch (const std::exception& e) {
    die(e.what());
  }
  return s;
}

} // namespace
} // namespace faultline::alloc

using namespace faultline::alloc;
using faultline::Bytes;

extern "C" {

void* faultline_alloc_malloc(ssize_t size, int device, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(g_mutex);
  DeviceState& s = state_for(device);
  const auto stream_id = reinterpret_cast<uint64_t>(stream);
  const Block b = s.model->malloc(static_cast<Bytes>(size), stream_id);
  if (b.address == 0) {
    ++s.usage.ooms;
    throw std::runtime_error("faultline_alloc: CUDA out of memory: " + std::to_string(size) +
                             " bytes requested with " + std::to_string(s.usage.allocated) +
                             " allocated and " + std::to_string(s.driver->physical_bytes()) +
                             " reserved under the limit (" + g_model + ")");
  }
  s.live[b.address] = {b.size, static_cast<Bytes>(size)};
  s.usage.on_malloc(b.size, size, s.driver->physical_bytes());
  return reinterpret_cast<void*>(b.address);
}

void faultline_alloc_free(void* ptr, ssize_t, int device, cudaStream_t) {
  std::lock_guard<std::mutex> lock(g_mutex);
  DeviceState& s = state_for(device);
  const auto address = reinterpret_cast<faultline::Addr>(ptr);
  auto it = s.live.find(address);
  if (it == s.live.end()) die("free of a pointer this allocator did not hand out");
  s.model->free(address);
  s.usage.on_free(it->second.size, it->second.requested, s.driver->physical_bytes());
  s.live.erase(it);
}

// allocated, peak allocated, reserved, peak reserved, requested, peak requested, mallocs,
// frees, driver creates, driver maps, stitches, out-of-memory count: summed over devices.
int faultline_alloc_stats(uint64_t* out, int n) {
  std::lock_guard<std::mutex> lock(g_mutex);
  uint64_t v[12] = {};
  for (auto& [device, s] : g_devices) {
    const Usage& u = s.usage;
    uint64_t stitches = 0;
    for (const auto& [name, value] : s.model->counters())
      if (name == "stitches") stitches = value;
    const uint64_t add[12] = {u.allocated,
                              u.peak_allocated,
                              u.reserved,
                              u.peak_reserved,
                              u.requested,
                              u.peak_requested,
                              u.mallocs,
                              u.frees,
                              s.driver->calls().create,
                              s.driver->calls().map + s.driver->calls().malloc,
                              stitches,
                              u.ooms};
    for (int i = 0; i < 12; ++i) v[i] += add[i];
  }
  for (int i = 0; i < n && i < 12; ++i) out[i] = v[i];
  return n < 12 ? n : 12;
}

void faultline_alloc_reset_peaks(void) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (auto& [device, s] : g_devices) {
    s.usage.peak_allocated = s.usage.allocated;
    s.usage.peak_requested = s.usage.requested;
    s.usage.peak_reserved = s.usage.reserved;
  }
}

} // extern "C"
