// Access sets from a sanitize-mode pass (tracer/inject/sanitize.cc): each kernel's pages record
// lists the 64 KB big pages it touched, in first-touch order, with the types it used; a copy or
// memset touches the pages of its ranges. Only pages of managed allocations are kept (device
// memory never migrates); the others are counted.
#pragma once

#include "tracer/convert/access_sets.h"

namespace faultline::capture {

// True for a pass recorded in sanitize mode.
bool is_sanitized(const RawStream& raw);

// Throws TraceError when a kernel in the range has no pages record (the pass ended early) or
// its device list overflowed (the set would be incomplete).
AccessSets sanitized_access_sets(const RawStream& raw, const Pass& pass);

} // namespace faultline::capture
