// The access pass's findings in the timing pass's address space: the two passes' allocations
// land at different addresses, so pages and host touches are named by (allocation ordinal,
// offset) in one and translated into the other.
#pragma once

#include "sim/trace/format.h"
#include "tracer/convert/access_sets.h"

#include <vector>

namespace faultline::capture {

struct HostTouch {
  uint64_t address = 0; // timing-pass address, 64 KB aligned
  AccessType type = AccessType::kRead;
};

struct Translated {
  std::vector<std::vector<trace::Access>> per_op; // timing-pass big pages, offsets unset
  std::vector<bool> argument_sets;                // per op: add its arguments' allocations
  // Per op: the host's touches before it, split at the last step mark before it, so a step's
  // touches stay in that step (the reads after its last kernel) and set-up ones before step 0.
  std::vector<std::vector<HostTouch>> touches_before_mark, touches_before;
  std::vector<HostTouch> touches_after; // after the last operation
  bool host_touches = false;            // the access pass recorded host touches (sanitize mode)
  uint64_t untranslated = 0;
};

// Access-pass pages and host touches -> timing-pass addresses; what falls in no allocation is
// counted in `untranslated`.
Translated translate(const RawStream& access_raw, const Pass& access, const AccessSets& sets,
                     const std::vector<uint64_t>& timing_addresses);

} // namespace faultline::capture
