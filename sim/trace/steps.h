// Training steps (iterations) in a trace: the header's optional "steps" key (traces/FORMAT.md).
#pragma once

#include "sim/core/types.h"

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

// The "steps" value of a header (what a writer puts into its metadata).
nlohmann::json steps_json(const std::vector<Step>& steps);

// Rewrites the trace at `path` with the header's "steps" set to `steps` (through a temporary
// file beside it). For writers that learn where steps begin only after writing the records.
void rewrite_steps(const std::string& path, const std::vector<Step>& steps);

// `PATH: header: "steps"[i].field: what`, the form of every steps error.
std::string steps_error(const std::string& path, size_t index, const char* field,
                        const std::string& what);

} // namespace faultline::trace
