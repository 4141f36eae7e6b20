// Shared state of the injection library: options, the raw sink, the live allocation table and
// the per-function cache. One instance per process (state()).
#pragma once

#include "tracer/raw/raw_format.h"

#include <cstdint>
#include <cstdio>
#include <cuda.h>
#include <cupti.h>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace faultline::inject {

enum class Mode { kObserve, kTiming, kAccess };

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

// CUPTI entry points.
void CUPTIAPI on_callback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                          const void* data);
void CUPTIAPI on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records);
void CUPTIAPI on_buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t size,
                                  size_t valid_size);
std::vector<CUpti_CallbackId> driver_callback_ids();
std::vector<CUpti_CallbackId> runtime_callback_ids();
std::string drain_meta(); // access mode: how often and how long the queue was drained

} // namespace faultline::inject
