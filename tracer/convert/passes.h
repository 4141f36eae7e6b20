// A capture pass as a list of GPU operations (kernels, copies, memsets) in launch order, each
// joined with its activity record, plus the checks that two passes ran the same program.
#pragma once

#include "tracer/convert/raw_reader.h"

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace faultline::capture {

enum class OpKind { kKernel, kMemcpy, kMemset };

struct Operation {
  OpKind kind = OpKind::kKernel;
  std::string name;     // demangled kernel name, or "[memcpy HtoD]", "[memset]", ...
  size_t api_index = 0; // position of its API record in RawStream::api
  uint64_t cpu_time = 0;
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t stream = 0; // CUPTI stream id
  uint64_t gpu_start = 0, gpu_end = 0;
  std::vector<uint64_t> pointers; // argument words, or a copy's destination and source
  size_t evict_after = kNone;     // api index of the eviction that followed it (access mode)

  static constexpr size_t kNone = std::numeric_limits<size_t>::max();
};

struct Pass {
  std::vector<Operation> ops; // inside the capture range, in launch order
  bool has_range = false;     // the program marked a range with cudaProfilerStart/Stop
  uint64_t range_start = 0;   // CPU time of the first cudaProfilerStart, or of the first event
  uint64_t unattributed = 0;  // kernels and copies in the range that no recorded call launched
};

// Joins each in-range launch, copy and memset with its activity record. Throws TraceError when
// an operation has no activity record (CUPTI dropped it) or the range holds a CUDA graph launch.
Pass build_pass(const RawStream& raw);

// Tracks live allocations while walking API events, numbering them in allocation order: the
// ordinal is how two passes, whose addresses differ, name the same allocation.
class AllocationWalk {
public:
  struct Live {
    uint64_t ordinal = 0;
    uint64_t size = 0;
    raw::AllocKind kind = raw::AllocKind::kManaged;
  };
  void apply(const ApiEvent& e); // alloc and free events; others are ignored
  // The live allocation holding `address`, or nullptr.
  const std::pair<const uint64_t, Live>* find(uint64_t address) const;
  const std::vector<std::pair<uint64_t, raw::AllocKind>>& history() const { return sizes_; }
  uint64_t address_of(uint64_t ordinal) const { return addresses_.at(ordinal); }

private:
  std::map<uint64_t, Live> live_;
  std::vector<std::pair<uint64_t, raw::AllocKind>> sizes_; // (size, kind) by ordinal
  std::vector<uint64_t> addresses_;                        // base address by ordinal
};

// Throws TraceError unless the two passes made the same allocations (kind and size, in order)
// and ran the same operations (kind, name, grid, block); the message names the first allocation
// or operation that differs. Returns how many operations' argument words fall in different
// allocations in the two passes: structures passed by value may carry uninitialised slots
// (PyTorch's CatArrInputTensorMetadata does), so such differences are counted, not fatal.
uint64_t align_passes(const RawStream& timing_raw, const Pass& timing, const RawStream& access_raw,
                      const Pass& access);

std::string demangle(const std::string& name);

} // namespace faultline::capture
