// API callbacks: record launches, copies, allocations, frees and synchronisations in call order,
// guard managed allocations against the GPU's free memory, and in timing and access mode move
// managed memory around each operation. The same code serves CUPTI's callbacks (observe, timing
// and access mode) and the Sanitizer API's (sanitize mode): both number driver and runtime
// functions alike, and their callback data are translated into an ApiCall first.
#include "tracer/inject/cupti_hooks.h"
#include "tracer/inject/state.h"
#include "tracer/raw/managed_budget.h"

#include <algorithm>
#include <cstring>
#include <cuda_runtime_api.h>
#include <set>
#include <string>

namespace faultline::inject {
namespace {

using raw::RawType;

thread_local uint32_t t_runtime_corr = 0;

void check(CUresult result, const char* what) {
  if (result == CUDA_SUCCESS) return;
  const char* text = nullptr;
  cuGetErrorString(result, &text);
  fatal(std::string(what) + " failed: " + (text ? text : "unknown error"));
}

// ---- the timing pass's bookkeeping --------------------------------------------------------

std::set<uint64_t> g_not_resident; // timing mode: managed allocations no launch has named yet
uint64_t g_timing_prefetches = 0;
std::vector<uint32_t> g_launch_cost_ns; // timing mode: what each launch's callback cost

void note_not_resident(uint64_t address) {
  std::lock_guard<std::mutex> lock(state().mutex);
  g_not_resident.insert(address);
}

void note_freed(uint64_t address) {
  std::lock_guard<std::mutex> lock(state().mutex);
  g_not_resident.erase(address);
}

void note_launch_cost(uint64_t ns) {
  std::lock_guard<std::mutex> lock(state().mutex); // launches may come from several threads
  g_launch_cost_ns.push_back(static_cast<uint32_t>(std::min<uint64_t>(ns, UINT32_MAX)));
}

using Ranges = std::vector<std::pair<uint64_t, uint64_t>>; // (address, bytes)

// The parts of `ranges` inside live managed allocations (a page the host touched may have been
// freed since).
Ranges clip_to_live(const Ranges& ranges) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  Ranges out;
  for (const auto& [address, size] : ranges) {
    auto it = s.live.upper_bound(address);
    if (it == s.live.begin()) continue;
    --it;
    if (it->second.kind != raw::AllocKind::kManaged) continue;
    const uint64_t begin = std::max(address, it->first);
    const uint64_t end = std::min(address + size, it->first + it->second.size);
    if (begin < end) out.emplace_back(begin, end - begin);
  }
  return out;
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
  at_api_boundary();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.live[address] = {size, kind};
    (kind == raw::AllocKind::kManaged ? s.managed_bytes : s.device_bytes) += size;
  }
  raw::RawAlloc record{now(), address, size, static_cast<uint32_t>(kind), corr};
  s.sink.write(RawType::kAlloc, record);
  if (kind == raw::AllocKind::kManaged && s.options.mode == Mode::kAccess)
    populate_on_host(address, size);
  if (s.options.mode == Mode::kSanitize) note_allocation(address, size, kind);
  if (s.options.mode == Mode::kTiming && kind == raw::AllocKind::kManaged) {
    note_not_resident(address);
    host_track(address, size);
  }
  if (s.options.mode == Mode::kRun) run_alloc(address, size, kind == raw::AllocKind::kManaged);
}

void record_free(uint64_t address, uint32_t corr) {
  if (address == 0) return;
  State& s = state();
  at_api_boundary();
  if (s.options.mode == Mode::kSanitize || s.options.mode == Mode::kTiming) host_untrack(address);
  if (s.options.mode == Mode::kTiming) note_freed(address);
  if (s.options.mode == Mode::kRun) run_free(address);
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

// Timing mode, before a launch: kernels must run with their data resident, without a call per
// launch that would stretch the program's own timeline. Each managed allocation goes to the GPU
// once, before the first launch that names it, and the 64 KB pages the host touched since the
// last launch go back (host_touch.cc sees them); a launch that needs neither costs a check.
void prefetch_for_launch(const std::vector<uint64_t>& words, CUstream stream) {
  Ranges targets;
  {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    for (uint64_t word : words) {
      if (g_not_resident.empty()) break;
      auto it = g_not_resident.upper_bound(word);
      if (it == g_not_resident.begin()) continue;
      --it;
      auto live = s.live.find(*it);
      if (live == s.live.end() || word >= *it + live->second.size) continue;
      targets.emplace_back(*it, live->second.size);
      g_not_resident.erase(it);
    }
  }
  const std::vector<uint64_t> touched = take_host_touched();
  for (size_t i = 0; i < touched.size();) { // runs of adjacent pages, one call each
    size_t j = i + 1;
    while (j < touched.size() && touched[j] == touched[j - 1] + 64 * 1024) ++j;
    targets.emplace_back(touched[i], (j - i) * 64 * 1024);
    i = j;
  }
  if (targets.empty()) return;
  ToolScope scope;
  CUdevice device = 0;
  check(cuCtxGetDevice(&device), "cuCtxGetDevice");
  CUmemLocation gpu{};
  gpu.type = CU_MEM_LOCATION_TYPE_DEVICE;
  gpu.id = device;
  for (const auto& [address, size] : clip_to_live(targets)) {
    check(cuMemPrefetchAsync(address, size, gpu, 0, stream), "cuMemPrefetchAsync to GPU");
    ++g_timing_prefetches;
  }
}

void on_launch(uint32_t id, const ApiCall& call) {
  // Sanitize mode records the launch from the Sanitizer's launch callback, which runs inside
  // this call and takes the arguments from here.
  if (state().options.mode == Mode::kSanitize) {
    if (call.enter) stash_launch(launch_args(id, call.params));
    return;
  }
  if (state().options.mode == Mode::kRun) {
    const LaunchArgs a = launch_args(id, call.params);
    if (call.enter) {
      const std::vector<uint64_t> words = record_launch(a, call.corr, t_runtime_corr);
      run_launch(function_name(a.f).c_str(), words, a.stream);
    } else {
      run_launched(a.stream);
    }
    return;
  }
  if (!call.enter) return after_operation();
  const uint64_t began = now();
  LaunchArgs a = launch_args(id, call.params);
  std::vector<uint64_t> words = record_launch(a, call.corr, t_runtime_corr);
  if (state().options.mode == Mode::kTiming) {
    prefetch_for_launch(words, a.stream);
    note_launch_cost(now() - began);
  }
  before_operation(std::move(words));
}

// ---- driver and runtime dispatch ---------------------------------------------------------

} // namespace

bool is_runtime_launch(uint32_t id) {
  return id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 ||
         id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000 ||
         id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060 ||
         id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060;
}

bool is_launch(uint32_t id) {
  return id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel ||
         id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz ||
         id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx ||
         id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz ||
         id == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel ||
         id == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz;
}

namespace {

bool succeeded(const ApiCall& call) {
  return *static_cast<const CUresult*>(call.result) == CUDA_SUCCESS;
}

// cudaProfilerStart/Stop are recorded at the runtime call and the driver call inside it is
// skipped: one record either way, whichever callbacks a front-end raises for internal calls.
thread_local bool t_in_runtime_profiler = false;

void on_range(bool on) {
  State& s = state();
  at_api_boundary();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.in_range = on;
  }
  g_host_clean = false;
  if (s.options.mode == Mode::kRun) run_range(on);
  raw::RawRange record{now(), on ? 1u : 0u, 0};
  s.sink.write(RawType::kRange, record);
  if (!on && s.options.mode != Mode::kSanitize)
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

// Synchronisations are recorded at the runtime call, and the driver call inside it is skipped:
// cudaDeviceSynchronize reaches the driver by no callback of its own (PyTorch's
// torch.cuda.synchronize() went unrecorded when only the driver's were watched).
thread_local bool t_in_runtime_sync = false;

// A synchronisation returned: run mode's policy host looks at the GPU's memory then.
void sync_returned() {
  if (state().options.mode == Mode::kRun) run_synced();
}

void on_sync(raw::SyncOp op, uint64_t handle, uint32_t corr) {
  if (t_in_runtime_sync) return;
  at_api_boundary();
  raw::RawSync record{now(), handle, static_cast<uint32_t>(op), corr};
  state().sink.write(RawType::kSync, record);
}

void on_driver(uint32_t id, const ApiCall& cb) {
  const bool enter = cb.enter;
  const void* p = cb.params;
  if (is_launch(id)) return on_launch(id, cb);
  switch (id) {
  case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged: {
    auto* q = static_cast<const cuMemAllocManaged_params*>(p);
    if (enter)
      guard_managed(q->bytesize);
    else if (succeeded(cb))
      record_alloc(*q->dptr, q->bytesize, raw::AllocKind::kManaged, cb.corr);
    return;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2: {
    auto* q = static_cast<const cuMemAlloc_v2_params*>(p);
    if (enter) {
      std::lock_guard<std::mutex> lock(state().mutex);
      note_free_memory();
    } else if (succeeded(cb))
      record_alloc(*q->dptr, q->bytesize, raw::AllocKind::kDevice, cb.corr);
    return;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
  case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz: {
    auto* q = static_cast<const cuMemAllocAsync_params*>(p);
    if (!enter && succeeded(cb))
      record_alloc(*q->dptr, q->bytesize, raw::AllocKind::kDevice, cb.corr);
    return;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
    if (enter) record_free(static_cast<const cuMemFree_v2_params*>(p)->dptr, cb.corr);
    return;
  case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
  case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
    if (enter) record_free(static_cast<const cuMemFreeAsync_params*>(p)->dptr, cb.corr);
    return;
  case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize:
    if (enter) on_sync(raw::SyncOp::kDevice, 0, cb.corr);
    if (!enter && !t_in_runtime_sync) sync_returned();
    return;
  case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize:
  case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz:
    if (enter)
      on_sync(
          raw::SyncOp::kStream,
          reinterpret_cast<uint64_t>(static_cast<const cuStreamSynchronize_params*>(p)->hStream),
          cb.corr);
    if (!enter && !t_in_runtime_sync) sync_returned();
    return;
  case CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize:
    if (enter)
      on_sync(raw::SyncOp::kEvent,
              reinterpret_cast<uint64_t>(static_cast<const cuEventSynchronize_params*>(p)->hEvent),
              cb.corr);
    if (!enter && !t_in_runtime_sync) sync_returned();
    return;
  case CUPTI_DRIVER_TRACE_CBID_cuProfilerStart:
  case CUPTI_DRIVER_TRACE_CBID_cuProfilerStop:
    if (enter && !t_in_runtime_profiler) on_range(id == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart);
    return;
  default:
    return;
  }
}

void on_copy(const ApiCall& cb, raw::CopyOp op, uint64_t dst, uint64_t src, uint64_t bytes,
             uint32_t kind, uint64_t stream, bool blocking = false) {
  // Run mode: a copy or memset is an operation as the trace has it (none of zero bytes).
  const bool run = state().options.mode == Mode::kRun && bytes > 0;
  if (run && !cb.enter) return run_launched(reinterpret_cast<CUstream>(stream));
  if (!cb.enter) return after_operation();
  at_api_boundary();
  raw::RawCopy record{now(),
                      stream,
                      dst,
                      src,
                      bytes,
                      cb.corr,
                      static_cast<uint32_t>(op),
                      kind,
                      blocking ? raw::kCopyBlocking : 0};
  state().sink.write(RawType::kCopy, record);
  if (run)
    run_launch(raw::copy_name(op == raw::CopyOp::kMemset, kind), {dst, src},
               reinterpret_cast<CUstream>(stream));
  before_operation({dst, src});
}

template <typename P> void memcpy_call(const ApiCall& cb, uint64_t stream, bool blocking) {
  auto* q = static_cast<const P*>(cb.params);
  on_copy(cb, raw::CopyOp::kMemcpy, reinterpret_cast<uint64_t>(q->dst),
          reinterpret_cast<uint64_t>(q->src), q->count, q->kind, stream, blocking);
}

template <typename P> void memset_call(const ApiCall& cb, uint64_t stream) {
  auto* q = static_cast<const P*>(cb.params);
  on_copy(cb, raw::CopyOp::kMemset, reinterpret_cast<uint64_t>(q->devPtr), 0, q->count, 0, stream);
}

template <typename P> uint64_t stream_of(const ApiCall& cb) {
  return reinterpret_cast<uint64_t>(static_cast<const P*>(cb.params)->stream);
}

void on_runtime(uint32_t id, const ApiCall& cb) {
  const bool enter = cb.enter;
  switch (id) {
  case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
  case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
  case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
  case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060:
    t_runtime_corr = enter ? cb.corr : 0;
    if (enter && state().options.mode == Mode::kSanitize)
      stash_launch(runtime_launch_args(id, cb.params));
    return;
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000:
    return memcpy_call<cudaMemcpy_v3020_params>(cb, 0, true);
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000:
    return memcpy_call<cudaMemcpyAsync_v3020_params>(
        cb, stream_of<cudaMemcpyAsync_v3020_params>(cb), false);
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000:
    return memset_call<cudaMemset_v3020_params>(cb, 0);
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000:
    return memset_call<cudaMemsetAsync_v3020_params>(cb,
                                                     stream_of<cudaMemsetAsync_v3020_params>(cb));
  case CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000:
  case CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000:
    if (enter) on_range(id == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000);
    t_in_runtime_profiler = enter;
    return;
  case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020:
    if (enter) on_sync(raw::SyncOp::kDevice, 0, cb.corr);
    t_in_runtime_sync = enter;
    if (!enter) sync_returned();
    return;
  case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000:
    if (enter)
      on_sync(raw::SyncOp::kStream, stream_of<cudaStreamSynchronize_v3020_params>(cb), cb.corr);
    t_in_runtime_sync = enter;
    if (!enter) sync_returned();
    return;
  case CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020:
    if (enter)
      on_sync(raw::SyncOp::kEvent,
              reinterpret_cast<uint64_t>(
                  static_cast<const cudaEventSynchronize_v3020_params*>(cb.params)->event),
              cb.corr);
    t_in_runtime_sync = enter;
    if (!enter) sync_returned();
    return;
  case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
  case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000:
    if (enter) {
      raw::RawSync record{now(), 0, 0, cb.corr};
      state().sink.write(RawType::kGraphLaunch, record);
    }
    return;
  default:
    return;
  }
}

} // namespace

std::string timing_meta() {
  std::vector<uint32_t> costs = g_launch_cost_ns;
  std::sort(costs.begin(), costs.end());
  const auto at = [&](double q) {
    return costs.empty() ? 0u
                         : costs[static_cast<size_t>(q * static_cast<double>(costs.size() - 1))];
  };
  return "{\"timing_launches\":" + std::to_string(costs.size()) +
         ",\"timing_launch_cost_median_ns\":" + std::to_string(at(0.5)) +
         ",\"timing_launch_cost_p90_ns\":" + std::to_string(at(0.9)) +
         ",\"timing_launch_cost_max_ns\":" + std::to_string(at(1.0)) +
         ",\"timing_prefetches\":" + std::to_string(g_timing_prefetches) + "}";
}

std::string drain_meta() {
  return "{\"access_drains\":" + std::to_string(g_drains) +
         ",\"access_drain_seconds\":" + std::to_string(g_drain_ns / 1e9) +
         ",\"access_evict_named_seconds\":" + std::to_string(g_named_ns / 1e9) +
         ",\"access_evict_rest_seconds\":" + std::to_string(g_rest_ns / 1e9) + "}";
}

void on_api_call(bool runtime, uint32_t id, const ApiCall& call) {
  if (in_tool()) return;
  if (runtime)
    on_runtime(id, call);
  else
    on_driver(id, call);
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                          const void* data) {
  auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  ApiCall call{cb->callbackSite == CUPTI_API_ENTER, cb->functionParams, cb->functionReturnValue,
               cb->correlationId};
  on_api_call(domain == CUPTI_CB_DOMAIN_RUNTIME_API, id, call);
}

uint32_t api_what(bool runtime, uint32_t id) {
  using raw::ApiWhat;
  if (runtime ? is_runtime_launch(id) : is_launch(id))
    return static_cast<uint32_t>(ApiWhat::kLaunch);
  if (!runtime) {
    switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize:
      return static_cast<uint32_t>(ApiWhat::kSync);
    case CUPTI_DRIVER_TRACE_CBID_cuProfilerStart:
      return static_cast<uint32_t>(ApiWhat::kRangeStart);
    case CUPTI_DRIVER_TRACE_CBID_cuProfilerStop:
      return static_cast<uint32_t>(ApiWhat::kRangeStop);
    default:
      return 0;
    }
  }
  switch (id) {
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000:
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000:
    return static_cast<uint32_t>(ApiWhat::kMemcpy);
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000:
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000:
    return static_cast<uint32_t>(ApiWhat::kMemset);
  case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000:
  case CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020:
    return static_cast<uint32_t>(ApiWhat::kSync);
  case CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000:
    return static_cast<uint32_t>(ApiWhat::kRangeStart);
  case CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000:
    return static_cast<uint32_t>(ApiWhat::kRangeStop);
  case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
  case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000:
    return static_cast<uint32_t>(ApiWhat::kGraphLaunch);
  default:
    return 0;
  }
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
          CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000,
          CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000,
          CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
          CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020,
          CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
          CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000,
          CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020,
          CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
          CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000};
}

} // namespace faultline::inject
