// LiveDevice on a real GPU (CUDA runtime + CUPTI), built as libfaultline_live.so. The replay
// loads it with dlopen, so the faultline binary itself never links CUDA.
//
// Budget evictions and policy actions run on a migration stream in the order issued; each kernel
// waits on an event recorded there at its launch, so every eviction and prefetch issued before
// a kernel completes before it starts (the contract in device.h). The unified-memory counters
// come from CUPTI activity records, summed as they arrive; fault addresses are kept for the
// policy.
#include "sim/live/device.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include <cupti.h>
#include <deque>
#include <mutex>
#include <string>

namespace faultline::live {
namespace {

constexpr uint64_t kBigPage = 64 * 1024;
constexpr unsigned kTouchesPerBigPage = 16; // one word in each 4 KB page
constexpr unsigned kThreads = 256;
constexpr size_t kSlots = 1 << 20;

// Where an allocation lives and how long it is.
struct Slot {
  char* base;
  uint64_t bytes;
};

__device__ void touch(unsigned int* word, TouchType type, unsigned long long* sink) {
  switch (type) {
  case TouchType::kWrite:
    *reinterpret_cast<volatile unsigned int*>(word) = 1u;
    break;
  case TouchType::kAtomic:
    atomicAdd(word, 1u);
    break;
  default:
    if (*reinterpret_cast<volatile unsigned int*>(word) == 0xfeedfaceu) atomicAdd(sink, 1ull);
  }
}

// One thread per 4 KB page of each touched 64 KB big page, pages in the recorded order by block,
// none past the allocation's end; thread 0 then waits out the recorded compute time
// (%globaltimer, ns).
__global__ void touch_kernel(const Touch* touches, uint64_t count, const Slot* slots,
                             uint64_t duration_ns, unsigned long long* sink) {
  unsigned long long start = 0;
  if (blockIdx.x == 0 && threadIdx.x == 0) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  const uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count * kTouchesPerBigPage) {
    const Touch t = touches[i / kTouchesPerBigPage];
    const Slot slot = slots[t.slot_type >> 2];
    const uint64_t offset = t.page * kBigPage + (i % kTouchesPerBigPage) * 4096;
    if (offset + sizeof(unsigned int) <= slot.bytes)
      touch(reinterpret_cast<unsigned int*>(slot.base + offset),
            static_cast<TouchType>(t.slot_type & 3), sink);
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    unsigned long long now = start;
    while (now - start < duration_ns) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  }
}

std::mutex g_counters_mutex;
Counters g_counters;
std::deque<FaultRecord> g_faults; // GPU page-fault records not yet taken

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 8 << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t,
                               size_t valid) {
  CUpti_Activity* record = nullptr;
  std::lock_guard<std::mutex> lock(g_counters_mutex);
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER) continue;
    const auto* u = reinterpret_cast<const CUpti_ActivityUnifiedMemoryCounter3*>(record);
    switch (u->counterKind) {
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD:
      g_counters.bytes_host_to_gpu += u->value;
      break;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH:
      g_counters.bytes_gpu_to_host += u->value;
      break;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOD:
      g_counters.bytes_peer += u->value;
      break;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT:
      g_counters.gpu_fault_records += 1;
      g_faults.push_back({u->address, u->start, u->end, u->value});
      break;
    default:
      break;
    }
  }
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(context, stream, &dropped) == CUPTI_SUCCESS)
    g_counters.dropped_records += dropped;
  std::free(buffer);
}

bool enable_counters(int device, bool fault_records, std::string& error) {
  CUpti_ActivityUnifiedMemoryCounterConfig config[4] = {};
  const CUpti_ActivityUnifiedMemoryCounterKind kinds[4] = {
      CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD,
      CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH,
      CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOD,
      CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT};
  const int count = fault_records ? 4 : 3;
  for (int i = 0; i < count; ++i) {
    config[i].scope = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_SINGLE_DEVICE;
    config[i].kind = kinds[i];
    config[i].deviceId = static_cast<uint32_t>(device);
    config[i].enable = 1;
  }
  if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
      cuptiActivityConfigureUnifiedMemoryCounter(config, count) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER) != CUPTI_SUCCESS) {
    error = "CUPTI refused the unified-memory counters";
    return false;
  }
  cuptiActivityFlushPeriod(1);
  return true;
}

class CudaDevice : public LiveDevice {
public:
  bool open(int device, const OpenOptions& options, std::string& error) {
    device_ = device;
    if (!check(cudaSetDevice(device), "cudaSetDevice")) return error = error_, false;
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, device);
    name_ = prop.name;
    if (options.counters && !enable_counters(device, options.fault_records != 0, error))
      return false;
    if (!check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate") ||
        !check(cudaStreamCreateWithFlags(&copies_, cudaStreamNonBlocking), "cudaStreamCreate") ||
        !check(cudaEventCreateWithFlags(&copied_, cudaEventDisableTiming), "cudaEventCreate") ||
        !check(cudaEventCreate(&wait_start_), "cudaEventCreate") ||
        !check(cudaEventCreate(&wait_end_), "cudaEventCreate") ||
        !check(cudaMalloc(&slots_, kSlots * sizeof(Slot)), "cudaMalloc (slot table)") ||
        !check(cudaMalloc(&sink_, sizeof(unsigned long long)), "cudaMalloc"))
      return error = error_, false;
    cudaMemset(slots_, 0, kSlots * sizeof(Slot));
    return true;
  }

  const char* name() override { return name_.c_str(); }

  uint64_t free_bytes() override {
    size_t free = 0, total = 0;
    cudaMemGetInfo(&free, &total);
    return free;
  }

  void* alloc_managed(uint64_t bytes) override {
    void* p = nullptr;
    // Left unpopulated, as the simulator's allocations start: a first touch on the GPU
    // populates the page there without a copy.
    if (!check(cudaMallocManaged(&p, bytes), "cudaMallocManaged")) return nullptr;
    return p;
  }

  void free_managed(void* base) override {
    synchronize();
    check(cudaFree(base), "cudaFree");
  }

  void set_slot(uint32_t slot, void* base, uint64_t bytes) override {
    if (slot >= kSlots) return void(fail("more than " + std::to_string(kSlots) + " allocations"));
    const Slot s{static_cast<char*>(base), bytes};
    check(cudaMemcpy(slots_ + slot, &s, sizeof(Slot), cudaMemcpyHostToDevice), "cudaMemcpy");
  }

  bool upload_touches(const Touch* touches, uint64_t count) override {
    if (touches_) cudaFree(touches_);
    touches_ = nullptr;
    return check(cudaMalloc(&touches_, count * sizeof(Touch)), "cudaMalloc (touches)") &&
           check(cudaMemcpy(touches_, touches, count * sizeof(Touch), cudaMemcpyHostToDevice),
                 "cudaMemcpy (touches)");
  }

  bool run_kernel(uint64_t first, uint64_t count, uint64_t duration_ns) override {
    const uint64_t threads = std::max<uint64_t>(1, count * kTouchesPerBigPage);
    const auto blocks = static_cast<unsigned>((threads + kThreads - 1) / kThreads);
    // The events around the wait time how long the kernel stream waited for the copies still
    // running when the kernel was launched (the stream is idle before: the last kernel was
    // waited for).
    if (!check(cudaEventRecord(copied_, copies_), "cudaEventRecord") ||
        !check(cudaEventRecord(wait_start_, stream_), "cudaEventRecord") ||
        !check(cudaStreamWaitEvent(stream_, copied_, 0), "cudaStreamWaitEvent") ||
        !check(cudaEventRecord(wait_end_, stream_), "cudaEventRecord"))
      return false;
    touch_kernel<<<blocks, kThreads, 0, stream_>>>(touches_ + first, count, slots_, duration_ns,
                                                   sink_);
    if (!check(cudaGetLastError(), "launch") || !check(cudaStreamSynchronize(stream_), "kernel"))
      return false;
    float ms = 0;
    last_wait_ns_ = check(cudaEventElapsedTime(&ms, wait_start_, wait_end_), "cudaEventElapsedTime")
                        ? static_cast<uint64_t>(ms * 1e6)
                        : 0;
    return true;
  }

  uint64_t last_copy_wait_ns() override { return last_wait_ns_; }

  void prefetch_to_gpu(void* p, uint64_t bytes) override {
    cudaMemLocation gpu{cudaMemLocationTypeDevice, device_};
    check(cudaMemPrefetchAsync(p, bytes, gpu, 0, copies_), "cudaMemPrefetchAsync to the GPU");
  }

  void evict_to_host(void* p, uint64_t bytes) override {
    cudaMemLocation host{cudaMemLocationTypeHost, 0};
    check(cudaMemPrefetchAsync(p, bytes, host, 0, copies_), "cudaMemPrefetchAsync to the host");
    // Diagnosis (issue 21, bytes back): FAULTLINE_LIVE_AFTER_EVICT=sync waits for each eviction,
    // =flush drains CUPTI's records after it without waiting.
    static const char* after = std::getenv("FAULTLINE_LIVE_AFTER_EVICT");
    if (after && std::string(after) == "sync") synchronize();
    if (after && std::string(after) == "flush") cuptiActivityFlushAll(0);
  }

  void prefetch_to_peer(void* p, uint64_t bytes) override {
    cudaMemLocation peer{cudaMemLocationTypeDevice, device_ + 1};
    check(cudaMemPrefetchAsync(p, bytes, peer, 0, copies_), "cudaMemPrefetchAsync to the peer");
  }

  uint64_t peer_free_bytes() override {
    int count = 0;
    size_t free = 0, total = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || device_ + 1 >= count) return 0;
    cudaSetDevice(device_ + 1);
    const bool ok = cudaMemGetInfo(&free, &total) == cudaSuccess;
    cudaSetDevice(device_);
    return ok ? free : 0;
  }

  void discard(void* p, uint64_t bytes) override {
    void* ptrs[1] = {p};
    size_t sizes[1] = {bytes};
    check(cudaMemDiscardBatchAsync(ptrs, sizes, 1, 0, copies_), "cudaMemDiscardBatchAsync");
  }

  void advise_remote(void* p, uint64_t bytes, bool on) override {
    cudaMemLocation host{cudaMemLocationTypeHost, 0};
    cudaMemLocation gpu{cudaMemLocationTypeDevice, device_};
    if (on) {
      check(cudaMemAdvise(p, bytes, cudaMemAdviseSetPreferredLocation, host), "cudaMemAdvise");
      check(cudaMemAdvise(p, bytes, cudaMemAdviseSetAccessedBy, gpu), "cudaMemAdvise");
    } else {
      check(cudaMemAdvise(p, bytes, cudaMemAdviseUnsetPreferredLocation, host), "cudaMemAdvise");
      check(cudaMemAdvise(p, bytes, cudaMemAdviseUnsetAccessedBy, gpu), "cudaMemAdvise");
    }
  }

  // One byte in every 4 KB page the range spans (the first at p, then at each page start), as
  // the simulator counts a host access's pages.
  void host_write(void* p, uint64_t bytes) override {
    synchronize();
    const auto start = reinterpret_cast<uintptr_t>(p);
    for (uintptr_t at = start; at < start + bytes; at = (at / 4096 + 1) * 4096)
      *reinterpret_cast<char*>(at) = 1;
  }

  void synchronize() override { check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

  void quiesce() override {
    synchronize();
    cuptiActivityFlushAll(0);
  }

  uint64_t take_faults(uint64_t* addresses, uint64_t max) override {
    std::lock_guard<std::mutex> lock(g_counters_mutex);
    const uint64_t n = std::min<uint64_t>(max, g_faults.size());
    for (uint64_t i = 0; i < n; ++i) addresses[i] = g_faults[i].address;
    g_faults.erase(g_faults.begin(), g_faults.begin() + static_cast<std::ptrdiff_t>(n));
    return n;
  }

  uint64_t take_fault_records(FaultRecord* records, uint64_t max) override {
    std::lock_guard<std::mutex> lock(g_counters_mutex);
    const uint64_t n = std::min<uint64_t>(max, g_faults.size());
    std::copy(g_faults.begin(), g_faults.begin() + static_cast<std::ptrdiff_t>(n), records);
    g_faults.erase(g_faults.begin(), g_faults.begin() + static_cast<std::ptrdiff_t>(n));
    return n;
  }

  // Device buffers on this GPU and the next, grown to the largest size asked for.
  bool peer_copy(uint64_t bytes, bool forward) override {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < device_ + 2) return false;
    if (bytes > peer_bytes_ && !grow_peer_buffers(bytes)) return false;
    const int other = device_ + 1;
    const bool ok =
        forward
            ? check(cudaMemcpyPeer(peer_[1], other, peer_[0], device_, bytes), "cudaMemcpyPeer")
            : check(cudaMemcpyPeer(peer_[0], device_, peer_[1], other, bytes), "cudaMemcpyPeer");
    return ok && check(cudaDeviceSynchronize(), "cudaMemcpyPeer");
  }

  Counters counters() override {
    quiesce();
    std::lock_guard<std::mutex> lock(g_counters_mutex);
    return g_counters;
  }

  const char* error() override { return error_.c_str(); }

private:
  bool check(cudaError_t status, const char* what) {
    if (status == cudaSuccess) return true;
    fail(std::string(what) + ": " + cudaGetErrorString(status));
    return false;
  }
  void fail(const std::string& message) {
    if (error_.empty()) error_ = message;
  }

  bool grow_peer_buffers(uint64_t bytes) {
    const int other = device_ + 1;
    int can = 0;
    cudaDeviceCanAccessPeer(&can, device_, other);
    if (can && !peer_[0]) {
      cudaDeviceEnablePeerAccess(other, 0);
      cudaSetDevice(other);
      cudaDeviceEnablePeerAccess(device_, 0);
      cudaSetDevice(device_);
      cudaGetLastError(); // already enabled is fine
    }
    if (!can) {
      fail("GPUs " + std::to_string(device_) + " and " + std::to_string(other) +
           " have no peer access: a copy would go through the host");
      return false;
    }
    if (peer_[0]) cudaFree(peer_[0]);
    cudaSetDevice(other);
    if (peer_[1]) cudaFree(peer_[1]);
    peer_[0] = peer_[1] = nullptr;
    peer_bytes_ = 0;
    const bool ok = check(cudaMalloc(&peer_[1], bytes), "cudaMalloc on the peer GPU");
    cudaSetDevice(device_);
    if (!ok || !check(cudaMalloc(&peer_[0], bytes), "cudaMalloc for peer copies")) return false;
    peer_bytes_ = bytes;
    return true;
  }

  int device_ = 0;
  std::string name_, error_;
  cudaStream_t stream_ = nullptr, copies_ = nullptr;
  cudaEvent_t copied_ = nullptr, wait_start_ = nullptr, wait_end_ = nullptr;
  uint64_t last_wait_ns_ = 0;
  void* peer_[2] = {nullptr, nullptr};
  uint64_t peer_bytes_ = 0;
  Slot* slots_ = nullptr;
  Touch* touches_ = nullptr;
  unsigned long long* sink_ = nullptr;
};

} // namespace
} // namespace faultline::live

extern "C" __attribute__((visibility("default"))) faultline::live::LiveDevice*
faultline_live_open(int device, const faultline::live::OpenOptions* options, char* message,
                    size_t message_size) {
  auto* d = new faultline::live::CudaDevice();
  std::string error;
  if (d->open(device, options ? *options : faultline::live::OpenOptions{}, error)) return d;
  std::snprintf(message, message_size, "%s", error.c_str());
  delete d;
  return nullptr;
}
