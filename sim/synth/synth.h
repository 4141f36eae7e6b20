// Synthetic workloads for tests and benchmarks. They never stand in for real traces in results.
#pragma once

#include "sim/core/types.h"

#include <nlohmann/json.hpp>
#include <string>

namespace faultline::synth {

struct Params {
  std::string pattern = "dnn"; // "stream", "random", "dnn", "window" or "pages"
  Bytes footprint = Bytes{1} << 30;
  uint32_t iterations = 2;
  uint64_t seed = 1;
  uint32_t kernels_per_iteration = 16; // stream and random
  uint32_t layers = 12;                // dnn
  uint32_t touches = 1;                // times each 64 KB big page is read within a kernel
  Time ns_per_access = 100;            // compute time per 64 KB access when resident
  // pages: in each 2 MB block, `touch_width` big pages from `touch_first`, then as many every
  // `touch_step` on; the held ones (held_step 0: none) likewise, brought in by a kernel before.
  uint32_t touch_first = 0, touch_step = 1, touch_width = 1;
  uint32_t held_first = 0, held_step = 0;
  // 0: a serial trace (each kernel at the previous one's end). Otherwise an issue-time trace: the
  // CPU issues a record every launch_gap_ns, the GPU runs the kernels back to back behind it, and
  // every step ends with a device sync; the header gets the steps' times as program_step_ns.
  Time launch_gap_ns = 0;
};

// Reads params from the CLI's JSON form ({"pattern": ..., "footprint": ...}), strictly.
Params params_from_json(const nlohmann::json& j, const std::string& where);
nlohmann::json to_json(const Params& p);

// Writes the trace; returns the number of accesses written.
uint64_t write_trace(const Params& p, const std::string& path, const std::string& command);

} // namespace faultline::synth
