// API callbacks: record launches, copies, allocations, frees and synchronisations in call order,
// guard managed allocations against the GPU's free memory, and in timing and access mode move
// managed memory around each operation.
#include "tracer/inject/state.h"
#include "tracer/raw/managed_budget.h"

#include <algorithm>
#include <cstring>
#include <cuda_runtime_api.h>
#include <string>

namespace faultline::inject {
namespace {

using raw::RawType;

// Set while the tool itself calls CUDA, so those calls are neither recorded nor manipulated.
thread_local bool t_in_tool = false;
thread_local uint32_t t_runtime_corr = 0;

struct ToolScope {
  ToolScope() { t_in_tool = true; }
  ~ToolScope() { t_in_tool = false; }
};

uint64_t now() {
  uint64_t t = 0;
  cuptiGetTimestamp(&t);
  return t;
}

void check(CUresult result, const char* what) {
  if (result == CUDA_SUCCESS) return;
  const char* text = nullptr;
  cuGetErrorString(result, &text);
  fatal(std::string(what) + " failed: " + (text ? text : "unknown error"));
}

bool manipulating() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.options.mode != Mode::kObserve && s.in_range;
}

// ---- allocations -------------------------------------------------------------------------

void note_free_memory() {
  State& s = state();
  if (s.free_at_start) return;
  size_t free_bytes = 0, total = 0;
  ToolScope scope;
  check(cuMemGetInfo(&free_bytes, &total), "cuMemGetInfo");
  s.free_at_start = free_bytes;
  CUdevice device = 0;
  char name[128] = "unknown";
  int driver = 0;
  if (cuCtxGetDevice(&device) == CUDA_SUCCESS) cuDeviceGetName(name, sizeof(name), device);
  cuDriverGetVersion(&driver);
  char text[400];
  std::snprintf(text, sizeof(text),
                "{\"gpu\":\"%s\",\"cuda_driver_api\":%d,\"gpu_free_at_start\":%zu,"
                "\"gpu_total\":%zu}",
                name, driver, free_bytes, total);
  s.sink.meta(text);
}

// Oversubscribed managed memory can hang the shared GPU: refuse before the driver sees it.
void guard_managed(uint64_t request) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  note_free_memory();
  std::string refusal = raw::managed_refusal(s.managed_bytes, s.device_bytes, request,
                                             s.free_at_start, s.options.margin);
  if (!refusal.empty()) fatal(refusal);
}

// In access mode pages must start on the host: a GPU's first touch of a never-populated page
// allocates it in place, with no migration to record.
void populate_on_host(uint64_t address, uint64_t size) {
  volatile char* p = reinterpret_cast<volatile char*>(address);
  for (uint64_t offset = 0; offset < size; offset += 4096) p[offset] = 0;
}

void record_alloc(uint64_t address, uint64_t size, raw::AllocKind kind, uint32_t corr) {
  State& s = state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.live[address] = {size, kind};
    (kind == raw::AllocKind::kManaged ? s.managed_bytes : s.device_bytes) += size;
  }
  raw::RawAlloc record{now(), address, size, static_cast<uint32_t>(kind), corr};
  s.sink.write(RawType::kAlloc, record);
  if (kind == raw::AllocKind::kManaged && s.options.mode == Mode::kAccess)
    populate_on_host(address, size);
}

void record_free(uint64_t address, uint32_t corr) {
  if (address == 0) return;
  State& s = state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.live.find(address);
    if (it != s.live.end()) {
      (it->second.kind == raw::AllocKind::kManaged ? s.managed_bytes : s.device_bytes) -=
          it->second.size;
      s.live.erase(it);
    }
  }
  raw::RawFree record{now(), address, corr, 0};
  s.sink.write(RawType::kFree, record);
}

// ---- moving managed memory ---------------------------------------------------------------

using Ranges = std::vector<std::pair<uint64_t, uint64_t>>; // (address, bytes)

Ranges live_managed() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  Ranges ranges;
  for (const auto& [address, a] : s.live)
    if (a.kind == raw::AllocKind::kManaged) ranges.emplace_back(address, a.size);
  return ranges;
}

// CUPTI's queue of unified-memory records is bounded and records beyond it are lost unreported
// (measured: a 2 GiB operation followed by a 1 GB eviction lost every record of the eviction).
// The converter attributes records to operations and evictions by time, not by position, so the
// queue needs draining only before it can overflow; but GPT-2 small lost whole access sets (7 of
// its first 160 operations) when an operation and its eviction shared one drain and the queue
// was drained every 64 operations or 1 GB. So the queue is drained before every eviction, after
// every 1 GB it moves, and after every `drain_every` evictions (1 unless experimenting). A drain
// costs about 20-40 ms on the H200, most of the access pass's time.
thread_local std::vector<uint64_t> t_operation_pointers;
uint64_t g_drains = 0, g_drain_ns = 0, g_named_ns = 0, g_rest_ns = 0;
uint64_t g_pending_bytes = 0; // bytes evicted since the last drain
uint32_t g_operations_since_drain = 0;
bool g_host_clean = false; // all managed memory is on the host (access mode)

void synchronize() {
  check(cuCtxSynchronize(), "cuCtxSynchronize");
}

void drain() {
  const uint64_t began = now();
  synchronize();
  cuptiActivityFlushAll(state().options.flush_forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
  ++g_drains;
  g_drain_ns += now() - began;
  g_pending_bytes = 0;
  g_operations_since_drain = 0;
}

// Prefetches the ranges to the host; when `counted`, in parts of at most `drain_bytes` between
// drains.
void prefetch_to_host(const Ranges& ranges, bool counted) {
  const uint64_t limit = state().options.drain_bytes;
  CUmemLocation host{};
  host.type = CU_MEM_LOCATION_TYPE_HOST;
  for (const auto& [address, size] : ranges) {
    for (uint64_t offset = 0; offset < size;) {
      uint64_t n = counted ? std::min(size - offset, limit - g_pending_bytes) : size;
      check(cuMemPrefetchAsync(address + offset, n, host, 0, nullptr),
            "cuMemPrefetchAsync to host");
      offset += n;
      if (!counted) continue;
      g_pending_bytes += n;
      if (g_pending_bytes == limit) drain();
    }
  }
}

// Access mode: everything managed goes to the host and the GPU is idle. After an operation the
// DtoH records inside this eviction's time window name every page the operation left on the GPU.
// The allocations its arguments name go first since they hold nearly all it touched; after an
// operation the rest normally moves nothing and is not counted. Before the first operation of a
// range everything may be on the GPU, so everything counts.
void evict_all_to_host(raw::EvictPurpose purpose) {
  ToolScope scope;
  Ranges named, rest;
  for (const auto& range : live_managed()) {
    bool hit = false;
    for (uint64_t p : t_operation_pointers)
      hit |= p >= range.first && p < range.first + range.second;
    (hit ? named : rest).push_back(range);
  }
  const bool after = purpose == raw::EvictPurpose::kAfterOperation;
  drain(); // the operation's own records (faults, migrations in) apart from the eviction's
  const uint64_t begin = now();
  prefetch_to_host(named, true);
  synchronize();
  const uint64_t named_end = now();
  prefetch_to_host(rest, !after);
  synchronize();
  g_named_ns += named_end - begin;
  g_rest_ns += now() - named_end;
  raw::RawEvict record{begin, now(), static_cast<uint32_t>(purpose), 0};
  state().sink.write(RawType::kEvict, record);
  g_host_clean = true;
  if (++g_operations_since_drain >= state().options.drain_every) drain();
}

bool access_mode_active() {
  return state().options.mode == Mode::kAccess && manipulating();
}

// Only the first operation of a range needs a clean host: after that, every operation in the
// range is followed by an eviction, and host code moves pages only towards the host.
void before_operation(std::vector<uint64_t> pointers) {
  t_operation_pointers = std::move(pointers);
  if (access_mode_active() && !g_host_clean) evict_all_to_host(raw::EvictPurpose::kBeforeOperation);
}

void after_operation() {
  if (access_mode_active()) evict_all_to_host(raw::EvictPurpose::kAfterOperation);
}

// Timing mode, before a launch: the managed allocations its arguments name go to the GPU on its
// stream, so the kernel runs with its data resident.
void prefetch_to_gpu(const std::vector<uint64_t>& words, CUstream stream) {
  Ranges targets;
  {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    for (uint64_t word : words) {
      auto it = s.live.upper_bound(word);
      if (it == s.live.begin()) continue;
      --it;
      if (it->second.kind == raw::AllocKind::kManaged && word < it->first + it->second.size)
        targets.emplace_back(it->first, it->second.size);
    }
  }
  // Many words may point into one allocation (a structure of pointers): prefetch it once.
  std::sort(targets.begin(), targets.end());
  targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
  ToolScope scope;
  CUdevice device = 0;
  check(cuCtxGetDevice(&device), "cuCtxGetDevice");
  CUmemLocation gpu{};
  gpu.type = CU_MEM_LOCATION_TYPE_DEVICE;
  gpu.id = device;
  for (const auto& [address, size] : targets)
    check(cuMemPrefetchAsync(address, size, gpu, 0, stream), "cuMemPrefetchAsync to GPU");
}

// ---- launches ----------------------------------------------------------------------------

const FunctionInfo& function_info(CUfunction handle) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.functions.find(handle);
  if (it != s.functions.end()) return it->second;
  CUfunction f = handle;
  ToolScope scope;
  FunctionInfo info;
  const char* name = nullptr;
  // The runtime launches context-independent CUkernel handles cast to CUfunction; the function
  // queries need the context's CUfunction behind them.
  CUfunction in_context = nullptr;
  if (cuFuncGetName(&name, f) != CUDA_SUCCESS &&
      cuKernelGetFunction(&in_context, reinterpret_cast<CUkernel>(f)) == CUDA_SUCCESS) {
    f = in_context;
    cuFuncGetName(&name, f);
  }
  info.name = name ? name : "unknown";
  for (size_t i = 0;; ++i) {
    size_t offset = 0, size = 0;
    if (cuFuncGetParamInfo(f, i, &offset, &size) != CUDA_SUCCESS) break;
    info.params.emplace_back(static_cast<uint32_t>(offset), static_cast<uint32_t>(size));
  }
  return s.functions.emplace(handle, std::move(info)).first->second;
}

// Every 8-byte word of the arguments that falls inside the span of live allocations: pointer
// arguments, and pointers packed in structures passed by value.
void scan_words(const char* bytes, size_t size, uint64_t low, uint64_t high,
                std::vector<uint64_t>& words) {
  for (size_t offset = 0; offset + 8 <= size; offset += 8) {
    uint64_t word = 0;
    std::memcpy(&word, bytes + offset, 8);
    if (word >= low && word < high) words.push_back(word);
  }
}

std::vector<uint64_t> pointer_words(const FunctionInfo& info, void** params, void** extra) {
  uint64_t low = 0, high = 0;
  {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.live.empty()) return {};
    low = s.live.begin()->first;
    high = s.live.rbegin()->first + s.live.rbegin()->second.size;
  }
  std::vector<uint64_t> words;
  if (params) {
    for (size_t i = 0; i < info.params.size(); ++i)
      scan_words(static_cast<const char*>(params[i]), info.params[i].second, low, high, words);
    return words;
  }
  const char* buffer = nullptr;
  size_t buffer_size = 0;
  for (size_t i = 0; extra && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
      buffer = static_cast<const char*>(extra[i + 1]);
    else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
      buffer_size = *static_cast<const size_t*>(extra[i + 1]);
  }
  if (buffer) scan_words(buffer, buffer_size, low, high, words);
  return words;
}

struct LaunchArgs {
  CUfunction f = nullptr;
  uint32_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  CUstream stream = nullptr;
  void** params = nullptr;
  void** extra = nullptr;
};

LaunchArgs launch_args(CUpti_CallbackId id, const void* p) {
  LaunchArgs a;
  if (id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx ||
      id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz) {
    auto* q = static_cast<const cuLaunchKernelEx_params*>(p);
    const CUlaunchConfig* c = q->config;
    a = {q->f,
         {c->gridDimX, c->gridDimY, c->gridDimZ},
         {c->blockDimX, c->blockDimY, c->blockDimZ},
         c->hStream,
         q->kernelParams,
         q->extra};
    return a;
  }
  if (id == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel ||
      id == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz) {
    auto* q = static_cast<const cuLaunchCooperativeKernel_params*>(p);
    a = {q->f,
         {q->gridDimX, q->gridDimY, q->gridDimZ},
         {q->blockDimX, q->blockDimY, q->blockDimZ},
         q->hStream,
         q->kernelParams,
         nullptr};
    return a;
  }
  auto* q = static_cast<const cuLaunchKernel_params*>(p);
  a = {q->f,
       {q->gridDimX, q->gridDimY, q->gridDimZ},
       {q->blockDimX, q->blockDimY, q->blockDimZ},
       q->hStream,
       q->kernelParams,
       q->extra};
  return a;
}

void on_launch(CUpti_CallbackId id, const CUpti_CallbackData* cb) {
  if (cb->callbackSite == CUPTI_API_EXIT) return after_operation();
  LaunchArgs a = launch_args(id, cb->functionParams);
  const FunctionInfo& info = function_info(a.f);
  std::vector<uint64_t> words = pointer_words(info, a.params, a.extra);
  raw::RawLaunch record{now(),
                        reinterpret_cast<uint64_t>(a.stream),
                        cb->correlationId,
                        t_runtime_corr,
                        {a.grid[0], a.grid[1], a.grid[2]},
                        {a.block[0], a.block[1], a.block[2]},
                        static_cast<uint32_t>(info.name.size()),
                        static_cast<uint32_t>(words.size())};
  state().sink.write(RawType::kLaunch, &record, sizeof(record), info.name.data(), info.name.size(),
                     words.data(), words.size() * 8);
  if (state().options.mode == Mode::kTiming && manipulating()) prefetch_to_gpu(words, a.stream);
  before_operation(std::move(words));
}

// ---- driver and runtime dispatch ---------------------------------------------------------

bool is_launch(CUpti_CallbackId id) {
  return id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel ||
         id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz ||
         id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx ||
         id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz ||
         id == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel ||
         id == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz;
}

bool succeeded(const CUpti_CallbackData* cb) {
  return *static_cast<const CUresult*>(cb->functionReturnValue) == CUDA_SUCCESS;
}

void on_range(bool on) {
  State& s = state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.in_range = on;
  }
  g_host_clean = false;
  raw::RawRange record{now(), on ? 1u : 0u, 0};
  s.sink.write(RawType::kRange, record);
}

void on_sync(raw::SyncOp op, uint64_t handle, uint32_t corr) {
  raw::RawSync record{now(), handle, static_cast<uint32_t>(op), corr};
  state().sink.write(RawType::kSync, record);
}

void on_driver(CUpti_CallbackId id, const CUpti_CallbackData* cb) {
  const bool enter = cb->callbackSite == CUPTI_API_ENTER;
  const void* p = cb->functionParams;
  if (is_launch(id)) return on_launch(id, cb);
  switch (id) {
  case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged: {
    auto* q = static_cast<const cuMemAllocManaged_params*>(p);
    if (enter)
      guard_managed(q->bytesize);
    else if (succeeded(cb))
      record_alloc(*q->dptr, q->bytesize, raw::AllocKind::kManaged, cb->correlationId);
    return;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2: {
    auto* q = static_cast<const cuMemAlloc_v2_params*>(p);
    if (enter) {
      std::lock_guard<std::mutex> lock(state().mutex);
      note_free_memory();
    } else if (succeeded(cb))
      record_alloc(*q->dptr, q->bytesize, raw::AllocKind::kDevice, cb->correlationId);
    return;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
  case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz: {
    auto* q = static_cast<const cuMemAllocAsync_params*>(p);
    if (!enter && succeeded(cb))
      record_alloc(*q->dptr, q->bytesize, raw::AllocKind::kDevice, cb->correlationId);
    return;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
    if (enter) record_free(static_cast<const cuMemFree_v2_params*>(p)->dptr, cb->correlationId);
    return;
  case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
  case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
    if (enter) record_free(static_cast<const cuMemFreeAsync_params*>(p)->dptr, cb->correlationId);
    return;
  case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize:
    if (enter) on_sync(raw::SyncOp::kDevice, 0, cb->correlationId);
    return;
  case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize:
  case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz:
    if (enter)
      on_sync(
          raw::SyncOp::kStream,
          reinterpret_cast<uint64_t>(static_cast<const cuStreamSynchronize_params*>(p)->hStream),
          cb->correlationId);
    return;
  case CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize:
    if (enter)
      on_sync(raw::SyncOp::kEvent,
              reinterpret_cast<uint64_t>(static_cast<const cuEventSynchronize_params*>(p)->hEvent),
              cb->correlationId);
    return;
  case CUPTI_DRIVER_TRACE_CBID_cuProfilerStart:
    if (enter) on_range(true);
    return;
  case CUPTI_DRIVER_TRACE_CBID_cuProfilerStop:
    if (enter) {
      on_range(false);
      cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    }
    return;
  default:
    return;
  }
}

void on_copy(const CUpti_CallbackData* cb, raw::CopyOp op, uint64_t dst, uint64_t src,
             uint64_t bytes, uint32_t kind, uint64_t stream) {
  if (cb->callbackSite == CUPTI_API_EXIT) return after_operation();
  raw::RawCopy record{now(), stream, dst, src, bytes, cb->correlationId, static_cast<uint32_t>(op),
                      kind,  0};
  state().sink.write(RawType::kCopy, record);
  before_operation({dst, src});
}

template <typename P> void memcpy_call(const CUpti_CallbackData* cb, uint64_t stream) {
  auto* q = static_cast<const P*>(cb->functionParams);
  on_copy(cb, raw::CopyOp::kMemcpy, reinterpret_cast<uint64_t>(q->dst),
          reinterpret_cast<uint64_t>(q->src), q->count, q->kind, stream);
}

template <typename P> void memset_call(const CUpti_CallbackData* cb, uint64_t stream) {
  auto* q = static_cast<const P*>(cb->functionParams);
  on_copy(cb, raw::CopyOp::kMemset, reinterpret_cast<uint64_t>(q->devPtr), 0, q->count, 0, stream);
}

template <typename P> uint64_t stream_of(const CUpti_CallbackData* cb) {
  return reinterpret_cast<uint64_t>(static_cast<const P*>(cb->functionParams)->stream);
}

void on_runtime(CUpti_CallbackId id, const CUpti_CallbackData* cb) {
  const bool enter = cb->callbackSite == CUPTI_API_ENTER;
  switch (id) {
  case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
  case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
  case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
  case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060:
    t_runtime_corr = enter ? cb->correlationId : 0;
    return;
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000:
    return memcpy_call<cudaMemcpy_v3020_params>(cb, 0);
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000:
    return memcpy_call<cudaMemcpyAsync_v3020_params>(cb,
                                                     stream_of<cudaMemcpyAsync_v3020_params>(cb));
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000:
    return memset_call<cudaMemset_v3020_params>(cb, 0);
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000:
    return memset_call<cudaMemsetAsync_v3020_params>(cb,
                                                     stream_of<cudaMemsetAsync_v3020_params>(cb));
  case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
  case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000:
    if (enter) {
      raw::RawSync record{now(), 0, 0, cb->correlationId};
      state().sink.write(RawType::kGraphLaunch, record);
    }
    return;
  default:
    return;
  }
}

} // namespace

std::string drain_meta() {
  return "{\"access_drains\":" + std::to_string(g_drains) +
         ",\"access_drain_seconds\":" + std::to_string(g_drain_ns / 1e9) +
         ",\"access_evict_named_seconds\":" + std::to_string(g_named_ns / 1e9) +
         ",\"access_evict_rest_seconds\":" + std::to_string(g_rest_ns / 1e9) + "}";
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                          const void* data) {
  if (t_in_tool) return;
  auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
    on_runtime(id, cb);
  else if (domain == CUPTI_CB_DOMAIN_DRIVER_API)
    on_driver(id, cb);
}

std::vector<CUpti_CallbackId> driver_callback_ids() {
  return {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
          CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
          CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
          CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
          CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
          CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
          CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
          CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
          CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
          CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz,
          CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
          CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
          CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz,
          CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize,
          CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
          CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz,
          CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize,
          CUPTI_DRIVER_TRACE_CBID_cuProfilerStart,
          CUPTI_DRIVER_TRACE_CBID_cuProfilerStop};
}

std::vector<CUpti_CallbackId> runtime_callback_ids() {
  return {CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
          CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
          CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
          CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
          CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
          CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000,
          CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
          CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000,
          CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020,
          CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000,
          CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
          CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000,
          CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
          CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000};
}

} // namespace faultline::inject
