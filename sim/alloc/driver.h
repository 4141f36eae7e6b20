// What an allocator model asks of the GPU driver. The simulator's SimDriver hands out addresses,
// enforces a physical capacity and remembers every mapping (so a block's bytes can be traced to
// physical memory); the live library's driver (live/) makes the same calls to CUDA. Both count
// the calls, which is the cost the models report.
#pragma once

#include "sim/core/types.h"

#include <cstdint>
#include <map>
#include <vector>

namespace faultline::alloc {

using Handle = uint64_t; // a physical allocation (cuMemCreate); 0 is "none"

struct DriverCalls {
  uint64_t malloc = 0;    // cudaMalloc
  uint64_t free = 0;      // cudaFree
  uint64_t create = 0;    // cuMemCreate
  uint64_t release = 0;   // cuMemRelease
  uint64_t reserve = 0;   // cuMemAddressReserve
  uint64_t unreserve = 0; // cuMemAddressFree
  uint64_t map = 0;       // cuMemMap + cuMemSetAccess of one handle
  uint64_t unmap = 0;     // cuMemUnmap of one handle's range
  uint64_t total() const {
    return malloc + free + create + release + reserve + unreserve + map + unmap;
  }
};

// Contract: malloc and create return 0 when the physical capacity would be exceeded (the
// allocator then releases what it caches and retries, or reports out-of-memory); every other
// call succeeds or throws. map takes a reserved range not mapped yet; unmap a mapped one; release
// a handle no longer mapped anywhere. physical_bytes() is what the allocator holds of the GPU:
// its reserved memory.
class Driver {
public:
  virtual ~Driver() = default;
  Addr malloc(Bytes size);
  void free(Addr address, Bytes size);
  Handle create(Bytes size);
  void release(Handle handle, Bytes size);
  Addr reserve(Bytes size);
  void unreserve(Addr address, Bytes size);
  void map(Addr address, Bytes size, Handle handle);
  void unmap(Addr address, Bytes size);
  // Waits for the GPU before memory that streams may still use is given back.
  virtual void synchronize() {}

  Bytes physical_bytes() const { return physical_; }
  const DriverCalls& calls() const { return calls_; }

protected:
  virtual Addr do_malloc(Bytes size) = 0;
  virtual void do_free(Addr address, Bytes size) = 0;
  virtual Handle do_create(Bytes size) = 0;
  virtual void do_release(Handle handle, Bytes size) = 0;
  virtual Addr do_reserve(Bytes size) = 0;
  virtual void do_unreserve(Addr address, Bytes size) = 0;
  virtual void do_map(Addr address, Bytes size, Handle handle) = 0;
  virtual void do_unmap(Addr address, Bytes size) = 0;

private:
  Bytes physical_ = 0;
  DriverCalls calls_;
};

// A contiguous piece of physical memory: `bytes` at `physical` in the SimDriver's physical
// address space, where each cudaMalloc and each handle occupies a range of its own.
struct Fragment {
  Addr physical = 0;
  Bytes bytes = 0;
};

// The simulator's driver. Virtual and physical addresses are handed out in increasing order
// and never reused, so a run's addresses depend only on its calls (determinism).
class SimDriver : public Driver {
public:
  explicit SimDriver(Bytes capacity) : capacity_(capacity) {}
  // The physical pieces behind [address, address + size), which must be allocated or mapped.
  std::vector<Fragment> translate(Addr address, Bytes size) const;
  // Every physical allocation live now: cudaMalloc ranges and handles, by physical address.
  const std::map<Addr, Bytes>& physical_ranges() const { return live_physical_; }
  Bytes capacity() const { return capacity_; }

protected:
  Addr do_malloc(Bytes size) override;
  void do_free(Addr address, Bytes size) override;
  Handle do_create(Bytes size) override;
  void do_release(Handle handle, Bytes size) override;
  Addr do_reserve(Bytes size) override;
  void do_unreserve(Addr address, Bytes size) override;
  void do_map(Addr address, Bytes size, Handle handle) override;
  void do_unmap(Addr address, Bytes size) override;

private:
  struct Mapping {
    Bytes size = 0;
    Addr physical = 0;
  };
  bool fits(Bytes size) const;
  Addr next_range(Addr& cursor, Bytes size);

  Bytes capacity_;
  Bytes live_bytes_ = 0;
  Addr next_virtual_ = Addr{1} << 40;
  Addr next_physical_ = Addr{1} << 40;
  std::map<Addr, Bytes> live_physical_; // physical address -> bytes; a handle is its address
  std::map<Addr, Bytes> reserved_;      // virtual ranges reserved
  std::map<Addr, Mapping> mapped_;      // virtual address -> what is mapped there (malloc too)
  std::map<Handle, int> map_count_;     // how many virtual ranges map each handle
};

} // namespace faultline::alloc
