// What a program did to unified memory on its own: the observe-mode summary.
#pragma once

#include "tracer/convert/raw_reader.h"

#include <nlohmann/json.hpp>

namespace faultline::capture {

// Counts and bytes of the stream's unified-memory records by kind and cause, its operations,
// allocations and dropped records. GPU fault records are grouped by the driver: "records" counts
// them and "fault_groups" sums their values, neither is a count of faulting pages.
nlohmann::json observe_summary(const RawStream& raw);

} // namespace faultline::capture
