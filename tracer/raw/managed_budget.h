// The managed-memory guard of the injection library, kept free of CUDA so CI can test it.
// Oversubscribed managed memory can hang a shared GPU: a managed allocation may proceed only if
// the live managed and device allocations plus the request stay within the GPU's free memory
// at the first allocation minus a margin.
#pragma once

#include <cstdint>
#include <string>

namespace faultline::raw {

// Returns an empty string when the allocation may proceed, else the refusal, which says what was
// asked, what it would reach and what the limit is.
inline std::string managed_refusal(uint64_t live_managed, uint64_t live_device, uint64_t request,
                                   uint64_t free_at_start, uint64_t margin) {
  const uint64_t limit = free_at_start > margin ? free_at_start - margin : 0;
  const uint64_t live = live_managed + live_device;
  if (live <= limit && request <= limit - live) return {};
  const uint64_t after = request > UINT64_MAX - live ? UINT64_MAX : live + request;
  return "refusing a managed allocation of " + std::to_string(request) +
         " bytes: managed and device allocations would reach " + std::to_string(after) +
         " bytes, more than the " + std::to_string(free_at_start) +
         " bytes the GPU had free minus the margin of " + std::to_string(margin) +
         " bytes (FAULTLINE_MARGIN)";
}

} // namespace faultline::raw
