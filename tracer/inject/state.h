// Shared state of the injection library: options, the raw sink, the live allocation table and
// the per-function cache, and the interfaces between its parts. One instance per process.
#pragma once

#include "tracer/raw/raw_format.h"

#include <cstdint>
#include <cstdio>
#include <cuda.h>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace faultline::inject {

// kRun is `faultline run`: the policy host inside the program (run.cc), no capture.
enum class Mode { kObserve, kTiming, kAccess, kSanitize, kProgram, kRun };

struct Options {
  std::string out_path;
  Mode mode = Mode::kObserve;
  bool profiler_range = false; // manipulate only between cudaProfilerStart and Stop
  bool managed = false;
  uint64_t margin = 2ull << 30;
  // Access mode: CUPTI's unified-memory queue is drained before every eviction, after every
  // drain_bytes it moves and after every drain_every evictions (see callbacks.cc).
  uint64_t drain_bytes = 1ull << 30;
  uint32_t drain_every = 1;
  bool flush_forced = false; // cuptiActivityFlushAll with CUPTI_ACTIVITY_FLAG_FLUSH_FORCED
  // Sanitize mode: the address window the page table covers, and whether host touches of
  // managed memory are recorded (by protecting it between GPU operations).
  uint64_t page_window = 2ull << 40;
  bool host_touches = true;
  bool um_counters = true; // CUPTI's unified-memory counters (FAULTLINE_UM_COUNTERS=0: off)
  // Run mode (`faultline run --per-kernel`): CUPTI's kernel, copy and unified-memory records go
  // into the raw stream too, each operation's GPU time and faults (FAULTLINE_RUN_PER_KERNEL=1).
  bool run_per_kernel = false;
  std::string patch_path; // faultline_pages.fatbin
  // Timing-pass cost probe (experiments/capture/probe_timing.sh), a comma-separated list of
  // parts left out: "activity" keeps CUPTI's activity records and drops the API callbacks,
  // "callbacks" the other way round, "no-launches" drops the launch callbacks,
  // "driver-launches" the runtime's launch callbacks, "no-flush-period" CUPTI's periodic flush,
  // "no-sync-activity" CUPTI's synchronisation records, "no-driver-api" the program pass's
  // driver-call records; "" is the pass as it runs.
  std::string probe;
  bool probing(const char* part) const; // `part` is one of the probe's list
};

// Writes raw records; every write takes the lock so API and activity threads can share it.
class Sink {
public:
  void open(const std::string& path);
  void write(raw::RawType type, const void* a, uint32_t a_size, const void* b = nullptr,
             uint32_t b_size = 0, const void* c = nullptr, uint32_t c_size = 0);
  template <typename T> void write(raw::RawType type, const T& payload) {
    write(type, &payload, sizeof(T));
  }
  void meta(const std::string& json) { write(raw::RawType::kMeta, json.data(), json.size()); }
  void error(const std::string& text) { write(raw::RawType::kError, text.data(), text.size()); }
  void add_dropped(uint64_t n);
  void finish(); // idempotent: writes the end record and closes

private:
  std::mutex mutex_;
  std::FILE* file_ = nullptr;
  uint64_t dropped_ = 0;
  uint64_t records_ = 0;
};

struct Allocation {
  uint64_t size = 0;
  raw::AllocKind kind = raw::AllocKind::kManaged;
};

struct FunctionInfo {
  std::string name;
  std::vector<std::pair<uint32_t, uint32_t>> params; // (offset, size)
};

struct State {
  Options options;
  Sink sink;
  std::mutex mutex; // guards everything below
  std::map<uint64_t, Allocation> live;
  uint64_t managed_bytes = 0;
  uint64_t device_bytes = 0;
  uint64_t free_at_start = 0; // GPU free memory at the first allocation, 0 until then
  bool in_range = true;
  std::unordered_map<CUfunction, FunctionInfo> functions;
};

State& state();
Options read_options();
std::string initial_meta(const Options& options, uint32_t cupti_version);
[[noreturn]] void fatal(const std::string& message);
uint64_t now(); // the clock API records carry: CUPTI's, or CLOCK_REALTIME in sanitize mode

// Set while the tool itself calls CUDA, so those calls are neither recorded nor manipulated.
bool in_tool();
struct ToolScope {
  ToolScope();
  ~ToolScope();
  bool was;
};

// A driver or runtime API call as either front-end reports it. Callback ids are CUPTI's, which
// the Sanitizer API numbers alike.
struct ApiCall {
  bool enter = true;
  const void* params = nullptr;
  const void* result = nullptr; // CUresult or cudaError_t, at exit
  uint32_t corr = 0;            // CUPTI's correlation id; 0 in sanitize mode
};
void on_api_call(bool runtime, uint32_t id, const ApiCall& call);

// A kernel launch's arguments, from a driver or runtime launch call's parameters.
struct LaunchArgs {
  CUfunction f = nullptr;
  uint32_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  CUstream stream = nullptr;
  void** params = nullptr;
  void** extra = nullptr;
};
LaunchArgs launch_args(uint32_t driver_id, const void* params);
LaunchArgs runtime_launch_args(uint32_t runtime_id, const void* params);
// Writes the launch record; returns the argument words that point into live allocations.
std::vector<uint64_t> record_launch(const LaunchArgs& a, uint32_t corr, uint32_t runtime_corr);

// Sanitize mode (sanitize.cc): start the Sanitizer API front-end; keep a launch call's arguments
// for the launch callback that follows inside the call; check an allocation against the page
// window and protect managed memory for host-touch recording.
void start_sanitizer();
void stash_launch(const LaunchArgs& a);
void note_allocation(uint64_t address, uint64_t size, raw::AllocKind kind);
std::string sanitize_meta();

// Host touches of managed memory (host_touch.cc), in sanitize and timing mode; no-ops otherwise.
void host_track(uint64_t address, uint64_t size);
void host_untrack(uint64_t address);
// Called before every recorded API event: protects the pages the host touched since the last
// event again, so each interval between GPU operations sees its first touches; sanitize mode
// writes them, timing mode keeps them for take_host_touched().
void at_api_boundary();
// Timing mode: the 64 KB pages (addresses) the host touched since the last call, ascending.
std::vector<uint64_t> take_host_touched();
std::string host_touch_meta();

// Run mode (run.cc): the policy host inside the program, loaded from $FAULTLINE_PROGRAM_LIB at
// the first event. Each hook stops the program with the policy host's message when it fails.
void run_alloc(uint64_t address, uint64_t size, bool managed);
void run_free(uint64_t address);
// A kernel launch, or a copy or memset (the trace's operations, named as the trace names them),
// before the driver sees it; and after it.
void run_launch(const char* name, const std::vector<uint64_t>& words, CUstream stream);
void run_launched(CUstream stream);
// The name a launch's function has (the converter's too).
const std::string& function_name(CUfunction f);
void run_synced();
void run_step();
void run_range(bool on); // cudaProfilerStart or Stop
void run_finish();       // at exit: the measurements written
// Run mode: a scope of the library's own work inside a program's call, whose CPU time goes to
// results.run_library_ns. Nested scopes count once.
struct LibraryTime {
  LibraryTime();
  ~LibraryTime();
  uint64_t start = 0;
};

} // namespace faultline::inject
