// What the GPU probes share: a clock, and the replay's device opened from its library
// (libfaultline_live.so), as `faultline replay` opens it.
#pragma once

#include "sim/live/device.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <vector>

namespace probe {

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The device of GPU 0 from the library at `path`, CUPTI's unified-memory counters on (the probes
// read them); exits with the reason when it cannot.
inline faultline::live::LiveDevice* open_device(const char* path) {
  void* lib = dlopen(path, RTLD_NOW);
  if (!lib) std::exit((std::printf("%s\n", dlerror()), 1));
  auto open =
      reinterpret_cast<faultline::live::OpenFunction>(dlsym(lib, faultline::live::kOpenSymbol));
  char message[512] = {};
  const faultline::live::OpenOptions options{.counters = 1};
  faultline::live::LiveDevice* d = open ? open(0, &options, message, sizeof message) : nullptr;
  if (!d) std::exit((std::printf("opening the device: %s\n", message), 1));
  return d;
}

// Prints what failed with the device's reason and exits.
[[noreturn]] inline void fail(faultline::live::LiveDevice& d, const char* what) {
  std::printf("%s: %s\n", what, d.error());
  std::exit(1);
}

// The replay's touch kernel over touches [first, first + count), no compute time.
inline void touch_kernel(faultline::live::LiveDevice& d, uint64_t first, uint64_t count) {
  if (!d.run_kernel(first, count, 0)) fail(d, "running the touch kernel");
}

// The middle of v (0 when empty).
inline int64_t median(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// An empty touch kernel's launch and wait, the median of 21 after one that loads the module;
// leaves the device's touches at one empty touch.
inline int64_t empty_kernel_ns(faultline::live::LiveDevice& d) {
  const faultline::live::Touch none{0, 0};
  if (!d.upload_touches(&none, 1)) fail(d, "uploading touches");
  touch_kernel(d, 0, 0);
  std::vector<int64_t> t;
  for (int i = 0; i < 21; ++i) {
    const int64_t t0 = now_ns();
    touch_kernel(d, 0, 0);
    t.push_back(now_ns() - t0);
  }
  return median(t);
}

} // namespace probe
