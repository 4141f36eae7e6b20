// The program pass: the program run once more with CUPTI's activity records alone (no callback,
// no managed memory), so its CPU's calls come at the program's own times. The timing pass's
// callbacks slow a launch-bound program's CPU (tracer/README.md), which would make the trace
// more host-bound than the program; its operations line up one to one with the program pass's,
// and every CPU time of the timing pass is moved onto the program's clock through them.
#pragma once

#include "tracer/convert/passes.h"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

namespace faultline::capture {

struct ProgramOp {
  OpKind kind = OpKind::kKernel;
  uint64_t cpu_time = 0;   // the call's entry
  uint64_t cpu_return = 0; // and its return
  uint64_t gpu_start = 0, gpu_end = 0;
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
};

struct ProgramPass {
  std::vector<ProgramOp> ops;                       // inside the range, in call order
  std::vector<std::pair<uint64_t, uint64_t>> syncs; // (entry, return) of each CPU-blocking sync
  bool has_range = false;                           // the program called cudaProfilerStart
  uint64_t range_start = 0, range_end = 0; // the calls' entries; range_end 0: no cudaProfilerStop
  uint64_t unattributed = 0;               // GPU records in the range whose call was not recorded
};

// Throws TraceError when `raw` is not a program pass's stream or its range holds a CUDA graph
// launch.
ProgramPass build_program_pass(const RawStream& raw);

// A monotone map from the timing pass's CPU clock to the program pass's: piecewise linear
// between anchors (each operation's call, each sync's entry and return, the range's ends), and a
// plain shift beyond them. Default-constructed it is the identity.
class CpuClock {
public:
  CpuClock() = default;
  // Throws TraceError naming both files when the passes ran different operations (count, kind,
  // grid and block of each kernel).
  CpuClock(const RawStream& timing, const Pass& tpass, const RawStream& program,
           const ProgramPass& ppass);
  uint64_t operator()(uint64_t timing_time) const;
  bool identity() const { return from_.empty(); }
  nlohmann::json summary() const { return summary_; }

private:
  std::vector<uint64_t> from_, to_;
  nlohmann::json summary_ = nullptr;
};

} // namespace faultline::capture
