// The CUPTI injection library behind `faultline capture`. CUDA loads it through
// CUDA_INJECTION64_PATH and calls InitializeInjection(); `faultline capture --managed` also
// LD_PRELOADs it so its cudaMalloc turns device allocations into managed ones.
//
// It writes the raw stream of tracer/raw/raw_format.h to $FAULTLINE_RAW_OUT. Environment:
//   FAULTLINE_RAW_OUT     output path (required)
//   FAULTLINE_MODE        observe | timing | access | sanitize | program | run (default observe)
//   FAULTLINE_RANGE       all | profiler: manipulate and mark only inside cudaProfilerStart/Stop
//   FAULTLINE_MANAGED     1: cudaMalloc becomes cudaMallocManaged (needs LD_PRELOAD)
//   FAULTLINE_MARGIN      bytes of GPU memory that managed allocations must leave free
//   FAULTLINE_DRAIN_BYTES access mode: drain CUPTI's unified-memory queue after evicting this
//                         many bytes (1 GiB), and before every eviction
//   FAULTLINE_DRAIN_EVERY access mode: and after every N evictions (1)
//   FAULTLINE_FLUSH       normal | forced: the flag of cuptiActivityFlushAll when draining
//   FAULTLINE_PATCH       sanitize mode: the patch fatbin (default: faultline_pages.fatbin next
//                         to this library)
//   FAULTLINE_PAGE_WINDOW sanitize mode: bytes of address space the page table covers (2 TiB)
//   FAULTLINE_HOST_TOUCHES sanitize mode: 0 turns off recording the host's touches
//   FAULTLINE_SANITIZER_LIB the Sanitizer API library (libsanitizer-public.so)
//   FAULTLINE_PROBE       a comma-separated list of activity, callbacks, no-launches,
//                         driver-launches, no-flush-period, no-sync-activity, no-driver-api:
//                         parts of the timing pass (program pass: no-driver-api) left out, to
//                         measure what they cost a program (the raw stream may then be partial)
//
// Modes: program changes nothing and records with CUPTI's activity API alone: kernels with their
// grids and the CPU's calls (launches, copies, syncs, the profiler range) with their times, the
// program's own timeline. observe changes nothing. timing prefetches each managed allocation to the
// GPU once, at the first launch that names it, and pages the host touched before the next launch,
// so kernel durations are the all-resident compute times with no call per launch. access moves all
// managed memory to the host before every kernel, copy and memset and waits for each to finish, so
// every 64 KB the operation touches migrates on demand and shows up as an HtoD record. sanitize
// uses the Sanitizer API instead of CUPTI: every kernel is patched to note the pages it touches
// (sanitize.cc), and the host's touches of managed memory are recorded (host_touch.cc).
// run is `faultline run`: CUPTI's callbacks alone feed the policy host inside the program
// (run.cc; $FAULTLINE_PROGRAM_LIB, $FAULTLINE_RUN_CONFIG).
#include "tracer/inject/cupti_hooks.h"
#include "tracer/inject/state.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <dlfcn.h>
#include <mutex>
#include <string>
#include <unistd.h>
#include <vector>

namespace faultline::inject {
namespace {

std::mutex g_init_mutex;
bool g_initialized = false;
CUpti_SubscriberHandle g_subscriber;

#define CUPTI_CHECK(call)                                                                          \
  do {                                                                                             \
    CUptiResult status_ = (call);                                                                  \
    if (status_ != CUPTI_SUCCESS) {                                                                \
      const char* text_ = nullptr;                                                                 \
      cuptiGetResultString(status_, &text_);                                                       \
      fatal(std::string("CUPTI call failed: ") + #call + ": " + (text_ ? text_ : "?"));            \
    }                                                                                              \
  } while (0)

void configure_um_counters() {
  const CUpti_ActivityUnifiedMemoryCounterKind kinds[] = {
      CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD,
      CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH,
      CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_CPU_PAGE_FAULT_COUNT,
      CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT,
      CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THRASHING,
      CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THROTTLING,
      CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_REMOTE_MAP,
      CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOD};
  CUpti_ActivityUnifiedMemoryCounterConfig config[8];
  for (int i = 0; i < 8; ++i) {
    config[i] = {};
    config[i].scope = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_SINGLE_DEVICE;
    config[i].kind = kinds[i];
    config[i].deviceId = 0;
    config[i].enable = 1;
  }
  CUPTI_CHECK(cuptiActivityConfigureUnifiedMemoryCounter(config, 8));
}

// Some kinds (unified-memory counters among them) can be enabled only once a context exists;
// before that CUPTI answers NOT_READY. Those start at the first context's creation.
std::vector<CUpti_ActivityKind> g_deferred;

void enable_kind(CUpti_ActivityKind kind, bool at_init) {
  CUptiResult status = cuptiActivityEnable(kind);
  if (status == CUPTI_ERROR_NOT_READY && at_init) return g_deferred.push_back(kind);
  CUPTI_CHECK(status);
}

void on_first_context() {
  static std::once_flag once;
  std::call_once(once, [] {
    const Options& o = state().options;
    if (o.um_counters && !o.probing("callbacks") && o.mode != Mode::kProgram &&
        (o.mode != Mode::kRun || o.run_per_kernel)) {
      configure_um_counters();
      enable_kind(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER, false);
    }
    for (CUpti_ActivityKind kind : g_deferred) enable_kind(kind, false);
  });
}

void CUPTIAPI dispatch(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                       const void* data) {
  if (domain == CUPTI_CB_DOMAIN_RESOURCE && id == CUPTI_CBID_RESOURCE_CONTEXT_CREATED)
    return on_first_context();
  // Records still queued when a context goes are lost; the runtime's own exit handler destroys
  // contexts before ours runs.
  if (domain == CUPTI_CB_DOMAIN_RESOURCE && id == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING)
    return (void)cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (state().options.mode == Mode::kRun) {
    LibraryTime timed;
    return on_callback(userdata, domain, id, data);
  }
  on_callback(userdata, domain, id, data);
}

void enable_callbacks() {
  CUPTI_CHECK(cuptiSubscribe(&g_subscriber, dispatch, nullptr));
  CUPTI_CHECK(cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                                  CUPTI_CBID_RESOURCE_CONTEXT_CREATED));
  CUPTI_CHECK(cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                                  CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING));
  const Options& o = state().options;
  if (o.probing("activity")) return;
  for (CUpti_CallbackId id : driver_callback_ids())
    if (!o.probing("no-launches") || !is_launch(id))
      CUPTI_CHECK(cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id));
  for (CUpti_CallbackId id : runtime_callback_ids())
    if ((!o.probing("no-launches") && !o.probing("driver-launches")) || !is_runtime_launch(id))
      CUPTI_CHECK(cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, id));
}

// Program mode: the calls' own activity records stand in for callbacks, so nothing runs inside
// the program's calls (no managed memory either: `faultline capture` leaves it off this pass).
// Only the calls the converter needs are recorded: PyTorch makes several other runtime and
// driver calls per launch, and recording every call doubled T5-base's step on an H100.
// Returns what was recorded, for the stream's meta.
std::string enable_program_activities() {
  CUPTI_CHECK(cuptiActivityRegisterCallbacks(on_buffer_requested, on_buffer_completed));
  for (CUpti_ActivityKind kind : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                  CUPTI_ACTIVITY_KIND_MEMSET})
    enable_kind(kind, true);
  const bool driver = !state().options.probing("no-driver-api");
  // Looked up in the CUPTI this library loaded, not linked: an older CUPTI lacks them.
  Dl_info info{};
  void* cupti = dladdr(reinterpret_cast<void*>(&cuptiGetVersion), &info) && info.dli_fname
                    ? dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD)
                    : nullptr;
  using EnableApi = CUptiResult (*)(CUpti_CallbackId, uint8_t);
  auto runtime_api =
      cupti ? reinterpret_cast<EnableApi>(dlsym(cupti, "cuptiActivityEnableRuntimeApi")) : nullptr;
  auto driver_api =
      cupti ? reinterpret_cast<EnableApi>(dlsym(cupti, "cuptiActivityEnableDriverApi")) : nullptr;
  bool chosen = runtime_api && driver_api;
  for (CUpti_CallbackId id : runtime_callback_ids())
    chosen = chosen && runtime_api(id, 1) == CUPTI_SUCCESS;
  for (CUpti_CallbackId id : driver_callback_ids())
    if (driver && api_what(false, id)) chosen = chosen && driver_api(id, 1) == CUPTI_SUCCESS;
  if (!chosen) { // an older CUPTI: every call, at its cost
    enable_kind(CUPTI_ACTIVITY_KIND_RUNTIME, true);
    if (driver) enable_kind(CUPTI_ACTIVITY_KIND_DRIVER, true);
  }
  CUPTI_CHECK(cuptiActivityFlushPeriod(100));
  return std::string("{\"program_calls\":\"") + (chosen ? "chosen" : "all") + "\"}";
}

void enable_activities() {
  CUPTI_CHECK(cuptiActivityRegisterCallbacks(on_buffer_requested, on_buffer_completed));
  const CUpti_ActivityKind kinds[] = {
      CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
      CUPTI_ACTIVITY_KIND_MEMORY2, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION};
  for (CUpti_ActivityKind kind : kinds)
    if (kind != CUPTI_ACTIVITY_KIND_SYNCHRONIZATION || !state().options.probing("no-sync-activity"))
      enable_kind(kind, true);
  // Deliver records while the program runs. Access mode moves gigabytes around every operation;
  // its completeness comes from the explicit drains in callbacks.cc (a 1 ms period alone lost
  // records), the short period only keeps buffers moving between them.
  if (!state().options.probing("no-flush-period"))
    CUPTI_CHECK(cuptiActivityFlushPeriod(state().options.mode == Mode::kAccess ? 1 : 100));
}

void enable_run_activities() {
  CUPTI_CHECK(cuptiActivityRegisterCallbacks(on_buffer_requested, on_buffer_completed));
  for (CUpti_ActivityKind kind : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                  CUPTI_ACTIVITY_KIND_MEMSET})
    enable_kind(kind, true);
  CUPTI_CHECK(cuptiActivityFlushPeriod(100));
}

void at_exit() {
  if (state().options.mode == Mode::kSanitize) {
    at_api_boundary();
    state().sink.meta(sanitize_meta());
    state().sink.meta(host_touch_meta());
  } else {
    if (state().options.mode == Mode::kRun) run_finish();
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    state().sink.meta(drain_meta());
    if (state().options.mode == Mode::kTiming) {
      at_api_boundary();
      state().sink.meta(timing_meta());
      state().sink.meta(host_touch_meta());
    }
  }
  state().sink.finish();
}

} // namespace

void fatal(const std::string& message) {
  std::fprintf(stderr, "faultline %s: %s\n", state().options.mode == Mode::kRun ? "run" : "capture",
               message.c_str());
  state().sink.error(message);
  state().sink.finish();
  _exit(70);
}

} // namespace faultline::inject

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  using namespace faultline::inject;
  std::lock_guard<std::mutex> lock(g_init_mutex);
  if (g_initialized) return 1;
  g_initialized = true;
  State& s = state();
  s.options = read_options();
  s.in_range = !s.options.profiler_range; // with a profiler range, nothing is moved before it
  s.sink.open(s.options.out_path);
  uint32_t cupti_version = 0;
  if (s.options.mode == Mode::kSanitize) {
    s.sink.meta(initial_meta(s.options, 0));
    start_sanitizer();
  } else {
    cuptiGetVersion(&cupti_version);
    s.sink.meta(initial_meta(s.options, cupti_version));
    if (s.options.mode == Mode::kProgram) {
      s.sink.meta(enable_program_activities());
      CUPTI_CHECK(cuptiSubscribe(&g_subscriber, dispatch, nullptr));
      for (CUpti_CallbackId id :
           {CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING})
        CUPTI_CHECK(cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE, id));
    } else {
      // Run mode keeps the program's timeline: callbacks only, no activity records, unless
      // asked for each operation's GPU time (--per-kernel: kernels, copies and the
      // unified-memory counters, which cost the run a little).
      if (!s.options.probing("callbacks") && s.options.mode != Mode::kRun) enable_activities();
      if (s.options.mode == Mode::kRun && s.options.run_per_kernel) enable_run_activities();
      enable_callbacks();
    }
  }
  std::atexit(at_exit);
  return 1;
}

// A step boundary, for programs that mark their iterations (the PyTorch hook calls it after
// every optimizer step). Outside a capture it does nothing.
extern "C" __attribute__((visibility("default"))) void faultline_mark_step(void) {
  using namespace faultline::inject;
  if (!g_initialized) return;
  at_api_boundary();
  faultline::raw::RawStep record{now()};
  state().sink.write(faultline::raw::RawType::kStep, record);
  if (state().options.mode == Mode::kRun) run_step();
}

// Run mode: the measurements written now, while the program's CUDA context still lives (the
// PyTorch hook calls it from Python's exit handlers, which run before the runtime tears the
// context down). Later calls, and the exit handler's, do nothing.
extern "C" __attribute__((visibility("default"))) void faultline_run_finish(void) {
  using namespace faultline::inject;
  if (g_initialized && state().options.mode == Mode::kRun) run_finish();
}

// cudaMalloc as `faultline capture --managed` wants it: managed memory, so an unmodified program
// (PyTorch's caching allocator included) runs on unified memory, as DeepUM and PUMP do.
extern "C" __attribute__((visibility("default"))) cudaError_t cudaMalloc(void** ptr, size_t size) {
  using MallocFn = cudaError_t (*)(void**, size_t);
  using ManagedFn = cudaError_t (*)(void**, size_t, unsigned);
  static MallocFn real_malloc = reinterpret_cast<MallocFn>(dlsym(RTLD_NEXT, "cudaMalloc"));
  static ManagedFn real_managed =
      reinterpret_cast<ManagedFn>(dlsym(RTLD_NEXT, "cudaMallocManaged"));
  const char* managed = std::getenv("FAULTLINE_MANAGED");
  if (managed && std::strcmp(managed, "1") == 0 && real_managed)
    return real_managed(ptr, size, cudaMemAttachGlobal);
  if (!real_malloc) {
    std::fprintf(stderr, "faultline capture: cudaMalloc not found after the injection library\n");
    return cudaErrorMemoryAllocation;
  }
  return real_malloc(ptr, size);
}
