// The UVM driver's density ("tree") prefetcher for one VA block and one destination, after
// uvm_perf_prefetch.c (see huvm-uvm-driver.md B.3).
#pragma once

#include "sim/memory/page_mask.h"

namespace faultline {

// Faulted pages grown to whole 64 KB big pages: the driver's minimum migration unit.
PageMask grow_to_big_pages(const PageMask& faulted);

// Returns the pages to migrate besides the (grown) faulted ones. The block's 512 pages form a
// binary tree with 64 KB leaves; leaves count as occupied if resident at the destination or
// faulted. For each faulted leaf, the largest ancestor region whose occupancy exceeds
// `threshold_percent` is prefetched whole. Only allocated pages are ever returned.
PageMask density_prefetch(const PageMask& resident, const PageMask& faulted,
                          const PageMask& allocated, unsigned threshold_percent);

} // namespace faultline
