// What the calibration tests (test_calibrate*.cc) share: a quick grid's measurements with
// plausible H200-like numbers, and the settings of a calibration named "testgpu".
#pragma once

#include "sim/live/calibrate.h"

#include <nlohmann/json.hpp>
#include <string>

namespace faultline::live::testing {

using nlohmann::json;

// A quick grid's measurements with plausible H200-like numbers.
inline json measurements() {
  json faults = json::array();
  for (const char* kind : {"populate", "migrate"})
    for (int blocks : {1, 8})
      for (int k : {1, 32}) {
        const bool migrate = std::string(kind) == "migrate";
        faults.push_back({{"kind", kind},
                          {"blocks", blocks},
                          {"pages_per_block", k},
                          {"ns", 40000 + blocks * (10000 + k * (migrate ? 9000 : 4000))}});
      }
  return {
      {"device", "made-up GPU"},
      {"repeats", 1},
      {"faultline", {{"git_revision", "test"}}},
      {"kernel_overhead_ns", 10000},
      {"prefetch_call_ns", 3000},
      {"host_to_gpu", {{65536, 40000}, {2097152, 90000}, {8388608, 190000}}},
      {"gpu_to_host", {{65536, 30000}, {2097152, 160000}, {8388608, 560000}}},
      {"eviction", {{"chunks", 4}, {"ns", 800000}}},
      {"prefetch_blocks",
       {{"blocks", 4}, {"resident_ns", 16000}, {"populate_ns", 100000}, {"migrate_ns", 500000}}},
      {"host_fault", {{"bytes", 4194304}, {"ns", 1500000}}},
      {"faults", faults},
      {"peer", nullptr}};
}

inline CalibrationSettings settings() {
  CalibrationSettings j;
  j.name = "testgpu";
  j.base = "h200";
  j.quick = true;
  return j;
}

} // namespace faultline::live::testing
