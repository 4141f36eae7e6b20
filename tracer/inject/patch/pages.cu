// Device functions the Sanitizer API patches into every kernel in sanitize mode (built with
// nvcc --compile-as-tools-patch into faultline_pages.fatbin). They note each touched 64 KB big page
// in the PageTable of page_table.h; the host reads the list after the kernel.
#include "tracer/inject/page_table.h"

#include <sanitizer_patching.h>

using faultline::inject::kEpochShift;
using faultline::inject::kPageShift;
using faultline::inject::PageTable;

namespace {

// Adds `type` to the page's stamp for this epoch; appends an entry when the type is new to it.
// The common case, a page already stamped with this type, costs one load and no atomic. Lanes
// of a warp that touch the same page (nearly all, in dense kernels) elect one of them to do it.
__device__ __forceinline__ void note(PageTable* t, uint64_t address, uint32_t type) {
  const uint32_t peers = __match_any_sync(__activemask(), address >> kPageShift);
  uint32_t lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  if (peers & ((1u << lane) - 1)) return; // a lower lane of the group notes it
  const uint64_t offset = address - t->base;
  if (address < t->base || (offset >> kPageShift) >= t->pages) {
    atomicAdd(&t->outside, 1u);
    return;
  }
  const uint32_t page = static_cast<uint32_t>(offset >> kPageShift);
  uint32_t* stamp = t->stamps + page;
  const uint32_t epoch = t->epoch;
  uint32_t old = *reinterpret_cast<volatile uint32_t*>(stamp);
  for (;;) {
    const bool current = (old >> kEpochShift) == epoch;
    const uint32_t want = current ? (old | type) : ((epoch << kEpochShift) | type);
    if (want == old) return;
    const uint32_t seen = atomicCAS(stamp, old, want);
    if (seen != old) {
      old = seen;
      continue;
    }
    const uint32_t slot = atomicAdd(&t->count, 1u);
    if (slot < t->capacity) t->list[slot] = page | (type << 29);
    return;
  }
}

} // namespace

extern "C" __device__ __noinline__ SanitizerPatchResult faultline_global_access(
    void* userdata, uint64_t, void* ptr, uint32_t, uint32_t flags, const void*) {
  auto* t = static_cast<PageTable*>(userdata);
  if (!t || (flags & SANITIZER_MEMORY_DEVICE_FLAG_PREFETCH)) return SANITIZER_PATCH_SUCCESS;
  const uint32_t type = (flags & SANITIZER_MEMORY_DEVICE_FLAG_ATOMSYS) ? 4u
                        : (flags & SANITIZER_MEMORY_DEVICE_FLAG_WRITE) ? 2u
                                                                       : 1u;
  note(t, reinterpret_cast<uint64_t>(ptr), type);
  return SANITIZER_PATCH_SUCCESS;
}

// cp.async (Ampere-style operand loads in cuDNN and FlashAttention kernels): a global read.
// A zero-fill copy has no source.
extern "C" __device__ __noinline__ SanitizerPatchResult faultline_memcpy_async(void* userdata,
                                                                               uint64_t, void* src,
                                                                               uint32_t, uint32_t) {
  auto* t = static_cast<PageTable*>(userdata);
  if (t && src) note(t, reinterpret_cast<uint64_t>(src), 1u);
  return SANITIZER_PATCH_SUCCESS;
}

// Hopper tensor-core kernels take their operands by tensor-map copies, which no patch point
// reports; the flag tells the converter to add the allocations the kernel's arguments name.
extern "C" __device__ __noinline__ SanitizerPatchResult faultline_wgmma(void* userdata, uint64_t,
                                                                        uint32_t, uint32_t,
                                                                        uint32_t, uint32_t,
                                                                        uint32_t, uint32_t) {
  auto* t = static_cast<PageTable*>(userdata);
  if (t) t->wgmma = 1;
  return SANITIZER_PATCH_SUCCESS;
}
