// The GPU operations a live replay needs: the seam between the replay (sim/live/replay.h, plain
// C++, tested in CI with a fake) and the CUDA implementation (sim/live/cuda/, loaded at run time
// as libfaultline_live.so so that the faultline binary runs where no GPU or CUDA is).
//
// Contract:
//  - One kernel at a time: run_kernel() returns when the kernel has finished.
//  - Evictions, prefetches and discards are asynchronous and run in the order issued, on a
//    migration stream of their own: all issued before a run_kernel() complete before its
//    kernel starts (an event orders the two; the replay's budget relies on it).
//  - Memory comes from alloc_managed() only; the device never allocates more managed memory.
//  - Plain types only cross this boundary: the library may be built by another compiler.
#pragma once

#include <cstddef>
#include <cstdint>

namespace faultline::live {

enum class TouchType : uint32_t { kRead = 0, kWrite = 1, kAtomic = 2 };

// One 64 KB big page a kernel touches: allocation slot (see set_slot) and page within it.
struct Touch {
  uint32_t slot_type; // slot << 2 | TouchType
  uint32_t page;
};

struct Counters {
  uint64_t bytes_host_to_gpu = 0; // CUPTI unified-memory counters
  uint64_t bytes_gpu_to_host = 0;
  uint64_t bytes_peer = 0;        // device to device (with a neighbour GPU)
  uint64_t gpu_fault_records = 0; // grouped: one record may stand for several faults
  uint64_t dropped_records = 0;
};

// One GPU page-fault record of CUPTI: the faulted address, its start and end times and how many
// fault groups of the same page it stands for. CUPTI reports far fewer records than faults (43
// for 1024 faults, one for 16,384 faults beside held pages: experiments/live/data/
// h200-fault-fill/), so the records name faulted pages, not the driver's batches.
struct FaultRecord {
  uint64_t address = 0, start_ns = 0, end_ns = 0, groups = 0;
};

class LiveDevice {
public:
  virtual ~LiveDevice() = default;
  virtual const char* name() = 0;
  virtual uint64_t free_bytes() = 0; // GPU memory free now
  // A managed allocation, not yet populated anywhere (as the simulator's start); null on failure.
  virtual void* alloc_managed(uint64_t bytes) = 0;
  virtual void free_managed(void* base) = 0;
  // Kernels name allocations by slot; this says where slot `slot` lives from now on and how
  // long it is: a kernel never touches a byte past base + bytes (the last 64 KB page of an
  // allocation may be partial).
  virtual void set_slot(uint32_t slot, void* base, uint64_t bytes) = 0;
  // Every kernel's touches, uploaded once; kernels refer to them by position.
  virtual bool upload_touches(const Touch* touches, uint64_t count) = 0;
  // Runs one kernel over touches[first, first + count) in order, lasting at least
  // duration_ns, and waits for it; false on failure.
  virtual bool run_kernel(uint64_t first, uint64_t count, uint64_t duration_ns) = 0;
  // How long the last run_kernel waited on the GPU for the migrations issued before it, before
  // the kernel began (0 where the device cannot tell).
  virtual uint64_t last_copy_wait_ns() { return 0; }
  virtual void prefetch_to_gpu(void* p, uint64_t bytes) = 0;
  virtual void evict_to_host(void* p, uint64_t bytes) = 0;
  // Migrates the range to the next GPU (the neighbour), in order with the other migrations.
  virtual void prefetch_to_peer(void* p, uint64_t bytes) = 0;
  // The neighbour's free memory; 0 where there is none.
  virtual uint64_t peer_free_bytes() = 0;
  virtual void discard(void* p, uint64_t bytes) = 0;
  virtual void advise_remote(void* p, uint64_t bytes, bool on) = 0;
  // Writes every 4 KB page of the range from the CPU, so it is populated on the host.
  virtual void host_write(void* p, uint64_t bytes) = 0;
  // Waits for all work issued so far.
  virtual void synchronize() = 0;
  // Waits for all work, then drains the counters; the replay does not time this.
  virtual void quiesce() = 0;
  virtual Counters counters() = 0;
  // Addresses of the GPU page faults drained (by quiesce()) so far and not yet taken, in the
  // order the GPU reported them; at most `max` are written, the count is returned. Untaken
  // addresses are kept, so a caller that drains often must take them.
  virtual uint64_t take_faults(uint64_t* addresses, uint64_t max) = 0;
  // take_faults() with each fault's record (the probes' view of the driver's batches).
  virtual uint64_t take_fault_records(FaultRecord*, uint64_t) { return 0; }
  // Copies `bytes` between device buffers of this GPU and the next one and waits for it
  // (forward: this GPU to the next); false where there is no second GPU.
  virtual bool peer_copy(uint64_t bytes, bool forward) = 0;
  // Why the last call failed ("" if none failed).
  virtual const char* error() = 0;
};

// What CUPTI records while the device runs. Its unified-memory counters slow the GPU's fault
// path: an H100's quick calibration fitted 7.6 us a fault and 14.6 a VA block with them, 4.4 and
// 9.2 without (experiments/live/data/h100-da47aa33-cupti/). Programs run without them, so timed
// runs that stand for a program leave them off; with them off, counters() stays all zero.
struct OpenOptions {
  uint32_t counters = 0;      // CUPTI's unified-memory counters: bytes each way, fault records
  uint32_t fault_records = 1; // with counters, the GPU page-fault records among them
};

// The entry point libfaultline_live.so exports; null with `message` filled on failure.
using OpenFunction = LiveDevice* (*)(int device, const OpenOptions* options, char* message,
                                     size_t message_size);
constexpr const char* kOpenSymbol = "faultline_live_open";

} // namespace faultline::live
