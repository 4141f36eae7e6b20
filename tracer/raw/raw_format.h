// The raw capture stream: what the injection library (CUPTI or Sanitizer API) writes while the
// program runs and what the converter turns into a trace. Shared by both sides, so it uses no CUDA
// or CUPTI types.
//
// Layout: RawFileHeader, then records, each a RawRecordHead followed by `size` payload bytes.
// API records (launch, copy, alloc, free, sync, range) are written in host call order under one
// lock, so their order in the file is the program's order. Activity records (kernel, copy, UM,
// sync, memory) arrive later in CUPTI buffers and are joined to API records by correlation id or,
// for unified-memory counters, by GPU time. All integers are little-endian.
#pragma once

#include <cstdint>

namespace faultline::raw {

constexpr char kMagic[8] = {'F', 'L', 'R', 'A', 'W', '0', '1', '\n'};
constexpr uint32_t kVersion = 1;

struct RawFileHeader {
  char magic[8];
  uint32_t version;
  uint32_t reserved;
};

enum class RawType : uint16_t {
  kMeta = 1,         // JSON text: what the injector knows about the run
  kLaunch = 2,       // RawLaunch, then name bytes, then n_words u64 candidate pointer words
  kCopy = 3,         // RawCopy: a cudaMemcpy/cudaMemset call
  kAlloc = 4,        // RawAlloc
  kFree = 5,         // RawFree
  kSync = 6,         // RawSync
  kRange = 7,        // RawRange: cudaProfilerStart/Stop
  kKernelAct = 10,   // RawKernelAct
  kCopyAct = 11,     // RawCopyAct
  kUm = 12,          // RawUm
  kSyncAct = 13,     // RawSyncAct
  kMemoryAct = 14,   // RawMemoryAct
  kDropped = 15,     // RawDropped: CUPTI records lost for want of buffer space
  kError = 16,       // text: the injector stopped the program (e.g. the managed-memory guard)
  kEnd = 17,         // RawEnd: written at exit after the last flush
  kGraphLaunch = 18, // RawSync layout: a CUDA graph launch, which the tracer cannot expand
  kEvict = 19,       // RawEvict: access mode moved all managed memory to the host
  kPages = 20,       // RawPages, then n_entries u32 PageEntry: what one kernel touched (sanitize)
  kHostTouch = 21,   // RawHostTouch: the host's first touch of a 64 KB managed page (sanitize)
  kStep = 22,        // RawStep: the program marked a step boundary (faultline_mark_step)
  kApiAct = 23,      // RawApiAct: a CUDA call as CUPTI's activity API timed it (program pass)
  kKernelShape = 24  // RawKernelShape: a kernel's activity record with its grid (program pass)
};

struct RawRecordHead {
  uint16_t type;
  uint16_t reserved;
  uint32_t size; // payload bytes after this head
};

enum class CopyOp : uint32_t { kMemcpy = 0, kMemset = 1 };
// RawCopy::pad: the call blocks the CPU until its copy is done (cudaMemcpy, not ...Async).
constexpr uint32_t kCopyBlocking = 1;
// The name a copy or memset has as an operation of the trace (a kernel record), and of the run:
// `kind` is the cudaMemcpyKind.
inline const char* copy_name(bool memset, uint32_t kind) {
  if (memset) return "[memset]";
  switch (kind) {
  case 0:
    return "[memcpy HtoH]";
  case 1:
    return "[memcpy HtoD]";
  case 2:
    return "[memcpy DtoH]";
  case 3:
    return "[memcpy DtoD]";
  default:
    return "[memcpy]";
  }
}
// Whether an operation's name is one copy_name gives: no kernel's name begins with '['.
inline bool is_copy_name(const char* name) {
  return name[0] == '[';
}
enum class AllocKind : uint32_t { kManaged = 0, kDevice = 1 };
enum class SyncOp : uint32_t { kDevice = 0, kStream = 1, kEvent = 2 };

struct RawLaunch {
  uint64_t cpu_time;
  uint64_t stream; // CUstream handle value; 0 is the legacy default stream
  uint32_t corr_driver;
  uint32_t corr_runtime; // correlation id of the enclosing runtime call, 0 if none
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t name_length;
  uint32_t n_words;
};

struct RawCopy {
  uint64_t cpu_time;
  uint64_t stream;
  uint64_t dst;
  uint64_t src; // 0 for memset
  uint64_t bytes;
  uint32_t corr;
  uint32_t op;   // CopyOp
  uint32_t kind; // cudaMemcpyKind for memcpy
  uint32_t pad;  // kCopyBlocking, or 0
};

struct RawAlloc {
  uint64_t cpu_time;
  uint64_t address;
  uint64_t bytes;
  uint32_t kind; // AllocKind
  uint32_t corr;
};

struct RawFree {
  uint64_t cpu_time;
  uint64_t address;
  uint32_t corr;
  uint32_t pad;
};

struct RawSync {
  uint64_t cpu_time;
  uint64_t handle; // stream or event handle value
  uint32_t op;     // SyncOp
  uint32_t corr;
};

struct RawRange {
  uint64_t cpu_time;
  uint32_t on; // 1 at cudaProfilerStart, 0 at cudaProfilerStop
  uint32_t pad;
};

// Access mode sends all managed memory to the host after every operation (kAfterOperation); the
// DtoH records inside [begin, end] are exactly the pages the operation left on the GPU. The
// eviction before an operation (kBeforeOperation) is normally empty.
enum class EvictPurpose : uint32_t { kBeforeOperation = 0, kAfterOperation = 1 };

struct RawEvict {
  uint64_t begin; // CPU time, the clock CUPTI normalises activity timestamps to
  uint64_t end;
  uint32_t purpose; // EvictPurpose
  uint32_t pad;
};

// Sanitize mode: every global access of a kernel is patched to note its 64 KB big page in a device
// table; after the kernel the pages it touched come back as entries, in first-touch order. An
// entry is a page index relative to `window_base` (in 64 KB big pages) with the access type in its
// top three bits; a page appears once per type it was accessed with, its first entry giving its
// place in the order.
constexpr uint32_t kPageIndexBits = 29;
constexpr uint32_t kPageIndexMask = (1u << kPageIndexBits) - 1;
enum PageTypeBit : uint32_t { kPageRead = 1, kPageWrite = 2, kPageAtomic = 4 };
enum PagesFlag : uint32_t {
  kPagesWarpgroupMma = 1, // the kernel issued wgmma: Hopper tensor cores fed by tensor-map copies,
                          // which no patch point sees
  kPagesOverflow = 2      // more entries than the device list holds: the set is incomplete
};

struct RawPages {
  uint64_t window_base; // byte address of page index 0
  uint32_t corr;        // the launch's corr_driver (sanitize mode numbers launches itself)
  uint32_t n_entries;
  uint32_t flags;   // PagesFlag
  uint32_t outside; // accesses that fell outside the window (not recorded)
};

// Sanitize mode: managed pages are protected between GPU operations; the first touch of a 64 KB big
// page by the host after an operation is recorded (a read first, then a write if it writes).
struct RawHostTouch {
  uint64_t cpu_time;
  uint64_t address; // 64 KB aligned
  uint32_t type;    // PageTypeBit: kPageRead or kPageWrite
  uint32_t pad;
};

struct RawStep {
  uint64_t cpu_time;
};

struct RawKernelAct {
  uint64_t start;
  uint64_t end;
  uint32_t corr;
  uint32_t stream;
  uint32_t device;
  uint32_t pad;
};

struct RawCopyAct {
  uint64_t start;
  uint64_t end;
  uint64_t bytes;
  uint32_t corr;
  uint32_t stream;
  uint32_t is_memset;
  uint32_t copy_kind; // CUpti_ActivityMemcpyKind for copies
};

// CUpti_ActivityUnifiedMemoryCounterKind values, kept here so the converter needs no CUPTI header.
enum class UmCounter : uint32_t {
  kHtoD = 1,
  kDtoH = 2,
  kCpuFault = 3,
  kGpuFault = 4,
  kThrashing = 5,
  kThrottling = 6,
  kRemoteMap = 7,
  kDtoD = 8
};
// CUpti_ActivityUnifiedMemoryMigrationCause values (the flags of HtoD/DtoH records).
enum class MigrationCause : uint32_t {
  kUnknown = 0,
  kUser = 1,
  kCoherence = 2,
  kPrefetch = 3,
  kEviction = 4,
  kAccessCounters = 5
};
// CUpti_ActivityUnifiedMemoryAccessType values (the flags of GPU fault records).
enum class UmAccess : uint32_t { kUnknown = 0, kRead = 1, kWrite = 2, kAtomic = 3, kPrefetch = 4 };

struct RawUm {
  uint64_t start;
  uint64_t end;
  uint64_t address;
  uint64_t value;   // bytes for migrations, fault-group count for GPU faults, PC for CPU faults
  uint32_t counter; // UmCounter
  uint32_t src;
  uint32_t dst;
  uint32_t flags; // MigrationCause or UmAccess, by counter
};

// CUpti_ActivitySynchronizationType values (RawSyncAct::type) that block the CPU.
constexpr uint32_t kActivitySyncEvent = 1;   // cudaEventSynchronize
constexpr uint32_t kActivitySyncStream = 3;  // cudaStreamSynchronize
constexpr uint32_t kActivitySyncContext = 4; // cudaDeviceSynchronize / cuCtxSynchronize
struct RawSyncAct {
  uint64_t start;
  uint64_t end;
  uint32_t type;
  uint32_t corr;
  uint32_t stream;
  uint32_t pad;
};

struct RawMemoryAct {
  uint64_t timestamp;
  uint64_t address;
  uint64_t bytes;
  uint32_t op;   // CUpti_ActivityMemoryOperationType: 1 allocation, 2 release
  uint32_t kind; // CUpti_ActivityMemoryKind: 3 device, 4 managed, ...
  uint32_t corr;
  uint32_t pad;
};

// The program pass runs the program with CUPTI's activity records alone (no callback, no managed
// memory): its calls' CPU times are the program's own. Only the calls the converter needs are
// written, classified by the injection library so the converter needs no CUPTI header.
enum class ApiWhat : uint32_t {
  kLaunch = 1,
  kMemcpy = 2,
  kMemset = 3,
  kSync = 4, // blocks the CPU until GPU work ends: device, stream or event synchronisation
  kRangeStart = 5,
  kRangeStop = 6,
  kGraphLaunch = 7
};
enum class ApiDomain : uint32_t { kRuntime = 1, kDriver = 2 };

struct RawApiAct {
  uint64_t start; // the call's entry and return, on the activity records' clock
  uint64_t end;
  uint32_t corr;
  uint32_t what;   // ApiWhat
  uint32_t domain; // ApiDomain
  uint32_t thread;
};

struct RawKernelShape {
  uint64_t start;
  uint64_t end;
  uint32_t corr;
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t pad;
};

struct RawDropped {
  uint64_t count;
};

struct RawEnd {
  uint64_t dropped_total;
  uint64_t api_records;
};

static_assert(sizeof(RawFileHeader) == 16 && sizeof(RawRecordHead) == 8);
static_assert(sizeof(RawLaunch) == 56 && sizeof(RawCopy) == 56 && sizeof(RawUm) == 48);
static_assert(sizeof(RawPages) == 24 && sizeof(RawHostTouch) == 24);
static_assert(sizeof(RawApiAct) == 32 && sizeof(RawKernelShape) == 48);

} // namespace faultline::raw
