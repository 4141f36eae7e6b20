// What the live replay's tests share: a small DNN-like trace and a policy that logs the faults
// it is handed (registered once, in test_replay.cc, as "test-fault-log").
#pragma once

#include "sim/core/types.h"
#include "sim/synth/synth.h"
#include "test_support.h"

#include <string>
#include <vector>

namespace fltest {

inline std::string dnn_trace(const TempDir& dir, uint64_t seed) {
  faultline::synth::Params p;
  p.footprint = 64ull << 20;
  p.iterations = 2;
  p.layers = 6;
  p.seed = seed;
  const std::string path = dir.file("dnn-" + std::to_string(seed) + ".fltrace");
  faultline::synth::write_trace(p, path, "test");
  return path;
}

// Where "test-fault-log" appends each kernel's faults (a row per launch); null when unused.
extern std::vector<std::vector<faultline::Addr>>* fault_log;

} // namespace fltest
