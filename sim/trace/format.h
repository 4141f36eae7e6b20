// Trace format v2: the records a trace holds. The byte layout is specified in traces/FORMAT.md.
#pragma once

#include "sim/core/types.h"

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace faultline::trace {

constexpr std::array<char, 8> kMagic = {'F', 'L', 'T', 'R', 'A', 'C', 'E', '\n'};
constexpr uint32_t kVersion = 2;
// The oldest version this build reads: a v1 trace has no queue delays or sync waits, and its
// record times are played as recorded gaps (Timeline::kSerial).
constexpr uint32_t kOldestVersion = 1;
constexpr uint64_t kMaxStringBytes = 1 << 16; // longest kernel name a trace holds
// Every time in a trace (a record's, a kernel's end) stays below 2^62 ns (146 years), so that
// sums of two of them (a kernel's end, a step's shift) cannot overflow a Time.
constexpr int64_t kMaxTraceTime = int64_t{1} << 62;
// The most managed and device memory a trace may hold live at once: 1 TiB, more than any GPU's
// memory oversubscribed several times. Whatever reads a trace keeps books per 2 MB chunk, so a
// size believed unchecked would have a few bytes of input ask for millions of them.
constexpr uint64_t kMaxLiveBytes = uint64_t{1} << 40;
// Every address a trace names (an allocation's or host access's end, a kernel access's page) lies
// below 2^57, the widest virtual address space a CPU or GPU maps (x86-64 with five-level paging;
// CUDA's unified addresses use 47 to 49 bits). Whatever reads a trace walks ranges by 2 MB chunk
// (`b * kBlockSize < end`), which an end near 2^64 would overflow into an endless walk.
constexpr uint64_t kMaxAddress = uint64_t{1} << 57;

enum class RecordType : uint8_t {
  kString = 1, // internal: defines a kernel-name string; never returned by the reader
  kAlloc = 2,
  kFree = 3,
  kKernel = 4,
  kHostAccess = 5,
  kSync = 6,
  kEnd = 0x7f, // internal: trailer with the record count
};

enum class MemoryKind : uint8_t {
  kManaged = 0,        // cudaMallocManaged segment: the simulator migrates its pages
  kDevice = 1,         // cudaMalloc segment: always GPU-resident, takes capacity
  kAllocatorBlock = 2, // a caching-allocator block inside a segment (e.g. a PyTorch tensor)
};

enum class SyncKind : uint8_t { kDevice = 0, kStream = 1, kEvent = 2 };

// What a trace's record times mean (the header's "timeline", traces/FORMAT.md).
//  kIssue: each record's time is the CPU's issue time (the API call's entry), syncs carry how
//          long the CPU waited, and every wait of the CPU on the GPU is a sync record; whoever
//          plays the trace runs the CPU ahead of the GPU, as the program did.
//  kSerial: times are as recorded with nothing known of the CPU's waits; whoever plays the trace
//          keeps the recorded gap between one kernel's end and the next record (v1 traces,
//          synthetic traces).
enum class Timeline : uint8_t { kSerial, kIssue };

const char* to_string(RecordType type);
const char* to_string(MemoryKind kind);
const char* to_string(SyncKind kind);
const char* to_string(Timeline timeline);

struct AllocRecord {
  uint64_t id = 0; // unique among live allocations; 0 is reserved for "none"
  MemoryKind kind = MemoryKind::kManaged;
  Addr address = 0;
  Bytes size = 0;
  Time time = 0;
  uint64_t segment = 0; // for kAllocatorBlock: id of the segment holding it, else 0
};

struct FreeRecord {
  uint64_t id = 0;
  Time time = 0;
};

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
};

struct Access {
  uint64_t big_page = 0; // address / 64 KB
  Time offset = 0;       // from kernel start, in the all-resident timing
  AccessType type = AccessType::kRead;
};

struct KernelRecord {
  std::string name;
  uint32_t stream = 0;
  Dim3 grid, block;
  Time start = 0;               // launch time as recorded (the CPU's issue time, kIssue)
  Time duration = 0;            // compute time with all its data resident
  Time queued = 0;              // recorded GPU start minus `start` (0 where unknown, v1)
  std::vector<uint64_t> args;   // allocation ids named by its pointer arguments
  std::vector<Access> accesses; // in order, offsets non-decreasing and <= duration
};

struct HostAccessRecord {
  Time time = 0;
  Addr address = 0;
  Bytes size = 0;
  AccessType type = AccessType::kRead;
};

struct SyncRecord {
  Time time = 0;
  SyncKind kind = SyncKind::kDevice;
  uint32_t stream = 0;
  Time wait = 0; // how long the CPU was blocked in it, as recorded (0 where unknown, v1)
};

// One decoded record. Only the member named by `type` is meaningful; the others keep their
// storage so that a reader can reuse vectors from record to record.
struct Record {
  RecordType type = RecordType::kEnd;
  AllocRecord alloc;
  FreeRecord free;
  KernelRecord kernel;
  HostAccessRecord host;
  SyncRecord sync;

  Time time() const;
};

// Metadata keys every header carries; writers fill unknown values with "unknown".
// page_size and access_granularity are checked by the reader against this build.
nlohmann::json default_metadata();

} // namespace faultline::trace
