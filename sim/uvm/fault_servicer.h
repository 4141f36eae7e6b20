// The driver's replayable-fault path for one GPU: fault buffer, batches, per-VA-block servicing
// with the density prefetcher and synchronous eviction, then the fault replay (huvm-uvm-driver.md
// B.2).
#pragma once

#include "sim/core/engine.h"
#include "sim/uvm/migrator.h"

#include <deque>
#include <vector>

namespace faultline {

// Told when a batch has been fetched (policies see it) and when its fault replay resolves faults.
class FaultListener {
public:
  virtual ~FaultListener() = default;
  virtual void on_batch(Time now, const std::vector<uint64_t>& big_pages) = 0;
  virtual void on_replay(Time now, uint64_t resolved) = 0;
};

class BatchObserver {
public:
  virtual ~BatchObserver() = default;
  virtual void on_fault_batch(unsigned gpu, Time start, Time end, uint64_t faults,
                              uint64_t blocks) = 0;
};

class FaultServicer : public EventHandler {
public:
  FaultServicer(Engine& engine, MemoryModel& memory, Migrator& migrator, unsigned gpu,
                const config::GpuProfile& profile, const config::DriverConfig& driver, Stats& stats)
      : engine_(engine), memory_(memory), migrator_(migrator), gpu_(gpu), profile_(profile),
        driver_(driver), stats_(stats) {}

  void set_listener(FaultListener* listener) { listener_ = listener; }
  void set_observer(BatchObserver* observer) { observer_ = observer; }
  // A kernel's access missed at time `now`: the fault enters the buffer. `write`: the access
  // writes the page (a write to a discarded page costs the driver far more than a read).
  void raise(uint64_t big_page, Time now, bool write);
  bool idle() const { return !busy_ && buffer_.empty(); }

  void handle(uint32_t kind, Time now) override;
  std::string describe_in_flight() const override;

private:
  enum Event : uint32_t { kFetch, kReplay };
  struct BlockFaults {
    uint64_t index;
    PageMask faulted;
    PageMask written; // the faulted pages some access in the batch writes
  };
  void fetch(Time now);
  // Returns the CPU side's end; raises `copies_done` to its copies' end and `in_flight` to the
  // arrival of copies already on their way to pages it found resident.
  Time service_block(const BlockFaults& faults, Time cpu, Time& copies_done, Time& in_flight);
  void replay(Time now);

  Engine& engine_;
  MemoryModel& memory_;
  Migrator& migrator_;
  unsigned gpu_;
  const config::GpuProfile& profile_;
  const config::DriverConfig& driver_;
  Stats& stats_;
  FaultListener* listener_ = nullptr;
  BatchObserver* observer_ = nullptr;
  // Faulted big pages in arrival order, each shifted left one with its write bit below.
  std::deque<uint64_t> buffer_;
  bool busy_ = false;
  bool fetch_scheduled_ = false;
  uint64_t in_service_ = 0;
  Time batch_start_ = 0;
  std::vector<uint64_t> batch_; // the batch's big pages, sorted, unique
  std::vector<BlockFaults> blocks_;
  std::vector<VaBlock*> serviced_;
};

} // namespace faultline
