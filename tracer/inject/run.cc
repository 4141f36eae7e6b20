// Run mode (`faultline run`): the policy host runs inside the program. The module
// libfaultline_program.so (sim/program/seam.h) gets the program's allocations, frees, launches
// with their argument words, synchronisations, step marks and kernels' ends, and acts through
// the Device below: migrations on a stream of the library's own, which a launch's stream waits
// for only after the budget evicted for it. Kernels' ends come from an event recorded after each
// launch, polled at every hook; the CPU never waits for them. Timing events around each run of
// migrations measure the stream's GPU time (Device::migration_gpu_ns).
#include "sim/program/seam.h"
#include "tracer/inject/state.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cuda.h>
#include <deque>
#include <dlfcn.h>
#include <string>
#include <unordered_map>
#include <vector>

namespace faultline::inject {
namespace {

class CudaDevice : public program::Device {
public:
  void prefetch_to_gpu(uint64_t address, uint64_t bytes) override {
    open_run();
    CUmemLocation gpu{CU_MEM_LOCATION_TYPE_DEVICE, device()};
    call(cuMemPrefetchAsync(address, bytes, gpu, 0, stream()), "cuMemPrefetchAsync to the GPU");
  }
  void evict_to_host(uint64_t address, uint64_t bytes) override {
    open_run();
    CUmemLocation host{CU_MEM_LOCATION_TYPE_HOST, 0};
    call(cuMemPrefetchAsync(address, bytes, host, 0, stream()), "cuMemPrefetchAsync to the host");
  }
  void discard(uint64_t address, uint64_t bytes) override {
    open_run();
    CUdeviceptr p = address;
    size_t n = bytes;
    call(cuMemDiscardBatchAsync(&p, &n, 1, 0, stream()), "cuMemDiscardBatchAsync");
  }
  void advise_remote(uint64_t address, uint64_t bytes, bool on) override {
    CUmemLocation host{CU_MEM_LOCATION_TYPE_HOST, 0}, gpu{CU_MEM_LOCATION_TYPE_DEVICE, device()};
    call(cuMemAdvise(address, bytes,
                     on ? CU_MEM_ADVISE_SET_PREFERRED_LOCATION
                        : CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION,
                     host),
         "cuMemAdvise");
    call(cuMemAdvise(address, bytes,
                     on ? CU_MEM_ADVISE_SET_ACCESSED_BY : CU_MEM_ADVISE_UNSET_ACCESSED_BY, gpu),
         "cuMemAdvise");
  }
  void order_before(uint64_t program_stream) override {
    close_run();
    if (!fence_) call(cuEventCreate(&fence_, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    call(cuEventRecord(fence_, stream()), "cuEventRecord");
    call(cuStreamWaitEvent(reinterpret_cast<CUstream>(program_stream), fence_, 0),
         "cuStreamWaitEvent");
  }
  void order_after_launched() override;
  void synchronize() override {
    close_run();
    call(cuCtxSynchronize(), "cuCtxSynchronize");
    poll_runs();
  }
  uint64_t migration_gpu_ns() override {
    poll_runs();
    return migration_ns_;
  }
  // A run of migrations ends with the hook that issued it, or at an ordering call: the stream
  // may wait or idle after it, and that time is not the migrations'.
  void close_run() {
    if (!run_start_) return;
    CUevent end = timing_event();
    call(cuEventRecord(end, stream()), "cuEventRecord");
    runs_.push_back({run_start_, end});
    run_start_ = nullptr;
  }
  // The runs done: their GPU time counted, their events kept for the next.
  void poll_runs() {
    while (!runs_.empty()) {
      const auto [start, end] = runs_.front();
      if (!finishing && cuEventQuery(end) == CUDA_ERROR_NOT_READY) break;
      float ms = 0;
      if (cuEventElapsedTime(&ms, start, end) == CUDA_SUCCESS)
        migration_ns_ += static_cast<uint64_t>(static_cast<double>(ms) * 1e6);
      timing_spare_.push_back(start);
      timing_spare_.push_back(end);
      runs_.pop_front();
    }
  }
  uint64_t used_bytes() override {
    size_t free = 0, total = 0;
    call(cuMemGetInfo(&free, &total), "cuMemGetInfo");
    return total - free;
  }
  uint64_t total_bytes() override {
    size_t free = 0, total = 0;
    call(cuMemGetInfo(&free, &total), "cuMemGetInfo");
    return total;
  }
  const char* error() override { return error_.c_str(); }
  // At the program's exit the runtime may have destroyed the context already: what the policy
  // does then has nothing left to act on, and its measurements must still be written.
  bool finishing = false;

private:
  void call(CUresult r, const char* what) {
    if (r == CUDA_SUCCESS || finishing) return;
    const char* text = nullptr;
    cuGetErrorString(r, &text);
    fatal(std::string(what) + " failed: " + (text ? text : "unknown error"));
  }
  int device() {
    CUdevice d = 0;
    call(cuCtxGetDevice(&d), "cuCtxGetDevice");
    return d;
  }
  CUstream stream() {
    if (!stream_) call(cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    return stream_;
  }

  void open_run() {
    if (run_start_) return;
    run_start_ = timing_event();
    call(cuEventRecord(run_start_, stream()), "cuEventRecord");
  }
  CUevent timing_event() {
    CUevent e = nullptr;
    if (!timing_spare_.empty()) {
      e = timing_spare_.back();
      timing_spare_.pop_back();
    } else {
      call(cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
    }
    return e;
  }

  CUstream stream_ = nullptr;
  CUevent fence_ = nullptr;
  CUevent run_start_ = nullptr;                  // the open run's first event, if one is open
  std::deque<std::pair<CUevent, CUevent>> runs_; // closed runs not yet seen done
  std::vector<CUevent> timing_spare_;
  uint64_t migration_ns_ = 0;
  std::string error_;
};

CudaDevice g_device;
program::Hooks* g_hooks = nullptr;
// An event after each launch not yet seen done (null: a launch into a stream being captured
// into a graph, which runs only when the graph does: it counts as done at once).
std::deque<CUevent> g_running, g_spare;
std::unordered_map<CUstream, CUevent> g_last; // each stream's latest launch not yet seen done
uint64_t g_done = 0;
std::atomic<uint64_t> g_library_ns{0}; // LibraryTime's sum, over every thread
thread_local int t_library_depth = 0;

uint64_t steady_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

} // namespace

void CudaDevice::order_after_launched() {
  close_run();
  for (const auto& [stream, event] : g_last)
    call(cuStreamWaitEvent(this->stream(), event, 0), "cuStreamWaitEvent");
}

namespace {

program::Hooks& hooks() {
  if (g_hooks) return *g_hooks;
  const char* lib = std::getenv("FAULTLINE_PROGRAM_LIB");
  const char* config = std::getenv("FAULTLINE_RUN_CONFIG");
  if (!lib || !config) fatal("FAULTLINE_PROGRAM_LIB and FAULTLINE_RUN_CONFIG must be set");
  void* handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!handle) fatal(std::string("cannot load ") + lib + ": " + dlerror());
  auto open = reinterpret_cast<program::OpenFunction>(dlsym(handle, program::kOpenSymbol));
  if (!open) fatal(std::string(lib) + " has no " + program::kOpenSymbol);
  char message[1024] = "";
  ToolScope scope;
  g_hooks = open(&g_device, config, message, sizeof(message));
  if (!g_hooks) fatal(message);
  // Exit handlers run in the reverse order of their registration, static destructors among
  // them: registered after the module's statics were made, finishing runs before they go.
  std::atexit(run_finish);
  return *g_hooks;
}

void check(bool ok) {
  if (!ok) fatal(hooks().error());
  g_device.close_run(); // the hook's migrations are a run of their own
}

// Kernels done since the last look, in launch order. A query that fails (the context is
// gone) counts the kernel done: nothing of it is left to wait for.
void poll() {
  if (g_running.empty()) return;
  uint64_t done = g_done;
  while (!g_running.empty()) {
    CUevent e = g_running.front();
    if (e && cuEventQuery(e) == CUDA_ERROR_NOT_READY) break;
    if (e) {
      g_spare.push_back(e);
      for (auto it = g_last.begin(); it != g_last.end(); ++it)
        if (it->second == e) {
          g_last.erase(it);
          break;
        }
    }
    g_running.pop_front();
    ++done;
  }
  if (done != g_done) check(hooks().kernels_done(g_done = done));
}

} // namespace

void run_alloc(uint64_t address, uint64_t size, bool managed) {
  LibraryTime timed;
  ToolScope scope;
  std::lock_guard<std::mutex> lock(state().mutex);
  poll();
  check(hooks().alloc(address, size, managed));
}

void run_free(uint64_t address) {
  LibraryTime timed;
  ToolScope scope;
  std::lock_guard<std::mutex> lock(state().mutex);
  poll();
  check(hooks().free(address));
}

void run_launch(const char* name, const std::vector<uint64_t>& words, CUstream stream) {
  LibraryTime timed;
  ToolScope scope;
  std::lock_guard<std::mutex> lock(state().mutex);
  poll();
  check(hooks().launch(name, words.data(), words.size(), reinterpret_cast<uint64_t>(stream)));
}

void run_launched(CUstream stream) {
  LibraryTime timed;
  ToolScope scope;
  std::lock_guard<std::mutex> lock(state().mutex);
  CUstreamCaptureStatus capturing = CU_STREAM_CAPTURE_STATUS_NONE;
  cuStreamIsCapturing(stream, &capturing);
  if (capturing != CU_STREAM_CAPTURE_STATUS_NONE) return g_running.push_back(nullptr);
  CUevent e = nullptr;
  if (!g_spare.empty()) {
    e = g_spare.front();
    g_spare.pop_front();
  } else if (cuEventCreate(&e, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
    fatal("cuEventCreate failed");
  }
  if (cuEventRecord(e, stream) != CUDA_SUCCESS) fatal("cuEventRecord after a launch failed");
  g_running.push_back(e);
  g_last[stream] = e;
}

void run_synced() {
  LibraryTime timed;
  ToolScope scope;
  std::lock_guard<std::mutex> lock(state().mutex);
  poll();
  check(hooks().synced());
}

void run_step() {
  LibraryTime timed;
  ToolScope scope;
  std::lock_guard<std::mutex> lock(state().mutex);
  poll();
  check(hooks().step());
}

void run_range(bool on) {
  LibraryTime timed;
  ToolScope scope;
  std::lock_guard<std::mutex> lock(state().mutex);
  poll();
  check(hooks().range(on));
}

void run_finish() {
  static bool finished = false;
  if (!g_hooks || finished) return; // no CUDA work (`faultline run` says so), or done already
  ToolScope scope;
  std::lock_guard<std::mutex> lock(state().mutex);
  finished = true;
  g_device.finishing = true;
  g_device.close_run();
  cuCtxSynchronize(); // every kernel's end reaches the policy, the migrations are done
  poll();
  check(hooks().finish(g_library_ns.load()));
}

LibraryTime::LibraryTime() {
  if (t_library_depth++ == 0) start = steady_ns();
}

LibraryTime::~LibraryTime() {
  if (--t_library_depth == 0) g_library_ns += steady_ns() - start;
}

} // namespace faultline::inject
