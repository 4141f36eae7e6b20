// Training steps (iterations) in a trace: the header's optional "steps" key (traces/FORMAT.md).
#pragma once

#include "sim/core/types.h"
#include "sim/trace/format.h"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace faultline::trace {

// One captured training step. Records before step 0's first record are set-up.
struct Step {
  uint64_t first_record = 0; // index among timed records (types 2 to 6) of its first record
  Time start_ns = 0;         // trace time it begins; its records are not earlier
};

// Contract: returns the header's steps, at least one, first_record strictly ascending and
// start_ns non-decreasing. Without the key: one step at record 0 whose start_ns is 0 until the
// reader sees the first record (TraceReader fills it in). A malformed value throws TraceError
// naming the file and the JSON path: `PATH: header: "steps"[2].first_record: expected ...`.
// Checks against the records (start_ns, first_record within the trace) are the reader's.
std::vector<Step> parse_steps(const nlohmann::json& metadata, const std::string& path);

// The header's "timeline" (traces/FORMAT.md): "issue" or "serial"; without the key, kSerial. A
// version 1 trace is always kSerial, and one whose header says "issue" is refused. A bad value
// throws TraceError naming the file and key: `PATH: header: "timeline": expected ...`.
Timeline parse_timeline(const nlohmann::json& metadata, const std::string& path, uint32_t version);

// The header's "program_step_ns": the program's own time for each step, one positive integer per
// step (`steps` of them), measured while it ran; empty without the key. A bad value throws
// TraceError naming the JSON path: `PATH: header: "program_step_ns"[1]: expected ...`.
std::vector<Time> parse_program_steps(const nlohmann::json& metadata, const std::string& path,
                                      size_t steps);

// The "steps" value of a header (what a writer puts into its metadata).
nlohmann::json steps_json(const std::vector<Step>& steps);

// Rewrites the trace at `path` with the header's "steps" set to `steps` (through a temporary
// file beside it). For writers that learn where steps begin only after writing the records.
// `program_step_ns`, when not empty, is written beside them.
void rewrite_steps(const std::string& path, const std::vector<Step>& steps,
                   const std::vector<Time>& program_step_ns = {});

// `PATH: header: "steps"[i].field: what`, the form of every steps error.
std::string steps_error(const std::string& path, size_t index, const char* field,
                        const std::string& what);

} // namespace faultline::trace
