// Assembles each operation's access set from an access-mode pass.
//
// The set: the pages of the DtoH migrations in the eviction that followed the operation, i.e.
// every 64 KB big page the operation left on the GPU (complete: these records are few, one per
// resident run, and the queue is drained around them). The order: by the first HtoD migration
// of the page during the operation, for pages whose fault records CUPTI delivered; the rest
// follow in address order. The type: write or atomic where a GPU fault record of the operation
// says so, read otherwise.
#pragma once

#include "sim/core/types.h"
#include "tracer/convert/passes.h"

#include <vector>

namespace faultline::capture {

struct PageAccess {
  uint64_t big_page = 0; // address / 64 KB, in the access pass's address space
  AccessType type = AccessType::kRead;
};

struct AccessSets {
  std::vector<std::vector<PageAccess>> per_op;
  uint64_t pages = 0;         // total accesses
  uint64_t ordered_pages = 0; // of which ordered by an HtoD record (or by first touch)
  // Sanitize mode: operations whose tensor-map copies no patch sees (Hopper wgmma kernels); the
  // allocations their arguments name are added to their sets.
  std::vector<bool> argument_sets;
  uint64_t device_pages = 0;     // pages of device (not managed) allocations, left out
  uint64_t unowned_pages = 0;    // pages in no live allocation, left out
  uint64_t outside_accesses = 0; // accesses outside the page window, not recorded
};

// Throws TraceError when an operation has no eviction after it (the pass was not an access
// pass, or it ended early).
AccessSets assemble_access_sets(const RawStream& raw, const Pass& pass);

} // namespace faultline::capture
