// Runs one kernel at a time on a GPU: its accesses happen at their recorded offsets (shifted
// by the time it has stalled so far); a miss enters the fault buffer and the kernel keeps
// running until `fault_parallelism` faults are outstanding, then stalls until a fault replay.
#pragma once

#include "sim/core/engine.h"
#include "sim/trace/format.h"
#include "sim/uvm/fault_servicer.h"

#include <functional>
#include <map>

namespace faultline {

class KernelObserver {
public:
  virtual ~KernelObserver() = default;
  virtual void on_kernel(unsigned gpu, const KernelRow& row) = 0;
};

class KernelRunner : public EventHandler {
public:
  using DoneCallback = std::function<void(Time)>;

  // `from_host` carries remote accesses to host-mapped pages.
  KernelRunner(Engine& engine, MemoryModel& memory, FaultServicer& servicer, Migrator& migrator,
               Route& from_host, unsigned gpu, const config::GpuProfile& profile,
               const config::RunConfig& config, Stats& stats)
      : engine_(engine), memory_(memory), servicer_(servicer), migrator_(migrator),
        from_host_(from_host), gpu_(gpu), profile_(profile), config_(config), stats_(stats) {}

  // `device_ranges` are live cudaMalloc ranges: always resident, never fault. `launched`: when
  // the host asked for the kernel (KernelRow::launched), at most `now`.
  void start(trace::KernelRecord& kernel, uint64_t index, Time now, Time launched,
             DoneCallback done);
  void on_replay(Time now, uint64_t resolved);
  void set_device_ranges(const std::map<Addr, Bytes>* ranges) { device_ranges_ = ranges; }
  // The job's blocks sit this many 2 MB blocks above the trace's addresses (one address space
  // per job in the shared memory model).
  void set_block_offset(uint64_t blocks) { block_offset_ = blocks; }
  void set_observer(KernelObserver* observer) { observer_ = observer; }
  bool running() const { return running_; }

  void handle(uint32_t kind, Time now) override;
  std::string describe_in_flight() const override;

private:
  enum Event : uint32_t { kResume, kEnd };
  void advance(Time now);
  // Returns false when the kernel must stop here (stall or a new fault changed the horizon).
  bool access(const trace::Access& a, Time t);
  VaBlock* lookup(uint64_t block_index);
  bool in_device_memory(Addr address) const;
  void try_finish(Time now);

  Engine& engine_;
  MemoryModel& memory_;
  FaultServicer& servicer_;
  Migrator& migrator_;
  Route& from_host_;
  unsigned gpu_;
  const config::GpuProfile& profile_;
  const config::RunConfig& config_;
  Stats& stats_;
  const std::map<Addr, Bytes>* device_ranges_ = nullptr;
  uint64_t block_offset_ = 0;
  KernelObserver* observer_ = nullptr;

  trace::KernelRecord kernel_;
  uint64_t index_ = 0;
  DoneCallback done_;
  bool running_ = false;
  size_t next_ = 0;
  Time start_ = 0;
  Time launched_ = 0;
  Time shift_ = 0; // stall so far: later accesses happen this much later
  uint64_t outstanding_ = 0;
  Time stalled_since_ = -1;
  bool end_scheduled_ = false;
  uint64_t faults_ = 0;
  // The blocks this kernel has looked up, direct-mapped by block index: a kernel walks a few
  // blocks over and over, and the memory model's hash lookup was a tenth of a run. Blocks are
  // made and freed between kernels only, so an entry holds for the kernel; a new kernel starts
  // a new generation instead of clearing the table.
  struct CachedBlock {
    uint64_t generation = 0, index = 0;
    VaBlock* block = nullptr;
  };
  static constexpr size_t kCachedBlocks = 64;
  CachedBlock cached_[kCachedBlocks];
  uint64_t generation_ = 0;
};

} // namespace faultline
