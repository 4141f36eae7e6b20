// Units and sizes shared by every part of the simulator.
#pragma once

#include <cstdint>

namespace faultline {

// Simulated time in integer nanoseconds: integer so that event order never depends on rounding.
using Time = int64_t;
using Addr = uint64_t;
using Bytes = uint64_t;

constexpr Bytes kPageSize = 4096;             // driver tracking unit (x86 PAGE_SIZE)
constexpr Bytes kBigPageSize = 64 * 1024;     // GPU big page; the trace's access granularity
constexpr Bytes kBlockSize = 2 * 1024 * 1024; // VA block and GPU root chunk
constexpr unsigned kPagesPerBigPage = kBigPageSize / kPageSize;   // 16
constexpr unsigned kPagesPerBlock = kBlockSize / kPageSize;       // 512
constexpr unsigned kBigPagesPerBlock = kBlockSize / kBigPageSize; // 32

enum class AccessType : uint8_t { kRead = 0, kWrite = 1, kAtomic = 2, kPrefetch = 3 };

const char* to_string(AccessType type);

// A processor that can hold pages: the host is processor 0, GPU i is processor i + 1.
using ProcessorId = uint8_t;
constexpr ProcessorId kHost = 0;
constexpr unsigned kMaxGpus = 8;           // GPUs in one machine
constexpr ProcessorId kNoProcessor = 0xff; // memory nobody holds yet (never touched)
inline ProcessorId gpu_processor(unsigned gpu_index) {
  return static_cast<ProcessorId>(gpu_index + 1);
}

} // namespace faultline
