// `faultline run --per-kernel`: each operation the program ran (kernel, copy, memset), in the
// run's launch order, with its time on the GPU (and with --um-counters the faults and migrations
// during it), from CUPTI's records in the run's raw stream. The rows the simulator's per_kernel
// rows of the same trace are compared with (experiments/live/fidelity.py kernels).
#pragma once

#include "tracer/convert/raw_reader.h"

#include <nlohmann/json.hpp>

namespace faultline::program {

// Contract: one row per operation the run counts (a launch, or a copy or memset of at least
// one byte), in the order the program issued them: "index", "name", "start_ns" and "end_ns"
// (CUPTI's GPU times less the first operation's start), "gpu_ns", and with `counters` the
// unified-memory records that began inside [start, end]: "gpu_faults" (CUPTI's fault groups),
// "fault_records", "bytes_host_to_gpu" and "bytes_gpu_to_host" (without `counters` the stream
// holds none, and the rows leave these keys out rather than count zeros). An operation CUPTI has no
// record of (a launch into a stream being captured into a graph, a record dropped) has "gpu_ns":
// null. Records of kernels on several streams at once count the unified-memory records of their
// overlap in each.
nlohmann::json kernel_rows(const capture::RawStream& raw, bool counters = true);

} // namespace faultline::program
