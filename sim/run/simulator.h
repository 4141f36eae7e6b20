// Wires one run together: the machine (topology, memory, engine) and its jobs, the run's own
// trace on GPU 0 and any neighbour jobs on other GPUs.
#pragma once

#include "sim/run/job.h"

#include <memory>
#include <vector>

namespace faultline {

// Contract: construct with a validated config, the run's trace and GPU 0's capacity in chunks
// (neighbour jobs' capacities come from their specs; a GPU without a job offers all its
// memory); run() runs every job's trace once and returns what the run's own job measured.
// Deterministic.
class Simulator {
public:
  Simulator(const config::RunConfig& config, const std::string& trace_path,
            uint64_t capacity_chunks);
  ~Simulator();

  void set_transfer_observer(TransferObserver* o) { topology_.set_observer(o); }
  void set_batch_observer(BatchObserver* o);
  void set_kernel_observer(KernelObserver* o);
  void set_progress(ProgressReporter* p) { jobs_[0]->set_progress(p); }
  // Checks the memory model's invariants after every record (slow; for tests).
  void set_check_invariants(bool on);

  const Stats& run();
  Time end_time() const { return jobs_[0]->end_time(); }
  const trace::StepRepeater& reader() const { return jobs_[0]->reader(); }
  size_t jobs() const { return jobs_.size(); }
  const Job& job(size_t i) const { return *jobs_[i]; }
  uint64_t capacity_chunks(unsigned gpu) const { return memory_.capacity_chunks(gpu); }

private:
  // A copy: the jobs and their parts keep references into it, so the caller's config may go
  // before the run (an embedding, the Python API, builds one per call).
  const config::RunConfig config_;
  config::TopologySpec spec_;
  Engine engine_;
  Topology topology_;
  MemoryModel memory_;
  std::vector<std::unique_ptr<Job>> jobs_;
  bool started_ = false;
};

} // namespace faultline
