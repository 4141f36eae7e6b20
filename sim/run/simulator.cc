#include "sim/run/simulator.h"

#include "sim/core/error.h"
#include "sim/trace/inspect.h"

namespace faultline {
namespace {

// GPU 0 holds the run's capacity; a neighbour job's GPU its spec's; an idle GPU all it has.
std::vector<uint64_t> capacities(const config::RunConfig& config, const config::TopologySpec& spec,
                                 uint64_t own_chunks) {
  std::vector<uint64_t> out;
  for (const auto& gpu : spec.gpus) out.push_back(gpu.profile.memory_bytes / kBlockSize);
  out[0] = own_chunks;
  for (const auto& [gpu, bytes] : config.idle_gpu_bytes) out[gpu] = bytes / kBlockSize;
  for (const auto& job : config.neighbours)
    out[job.gpu] = job.capacity.chunks(trace::compute_stats(job.trace).footprint_chunks);
  return out;
}

} // namespace

Simulator::Simulator(const config::RunConfig& config, const std::string& trace_path,
                     uint64_t capacity_chunks)
    : config_(config), spec_(config::machine_topology(config)), engine_(config.watchdog_ns),
      topology_(spec_), memory_(capacities(config, spec_, capacity_chunks)) {
  const Machine machine{config_, spec_, engine_, memory_, topology_};
  jobs_.push_back(
      std::make_unique<Job>(machine, JobSetup{0, "main", trace_path, 0, config.policy,
                                              config.policy_params, nullptr, config.iterations}));
  const Job* own = jobs_[0].get();
  for (const auto& n : config.neighbours) {
    JobSetup setup{static_cast<unsigned>(jobs_.size()),
                   n.name,
                   n.trace,
                   n.gpu,
                   n.policy,
                   n.policy_params,
                   nullptr};
    if (n.repeat) setup.again = [own] { return !own->finished(); };
    jobs_.push_back(std::make_unique<Job>(machine, std::move(setup)));
  }
}

Simulator::~Simulator() = default;

void Simulator::set_batch_observer(BatchObserver* o) {
  for (auto& job : jobs_) job->set_batch_observer(o);
}

void Simulator::set_kernel_observer(KernelObserver* o) {
  for (auto& job : jobs_) job->set_kernel_observer(o);
}

void Simulator::set_check_invariants(bool on) {
  for (auto& job : jobs_) job->set_check_invariants(on);
}

const Stats& Simulator::run() {
  if (started_) throw SimulationError("a Simulator runs once");
  started_ = true;
  for (auto& job : jobs_) job->start();
  engine_.run();
  for (auto& job : jobs_) {
    if (!job->finished()) {
      throw SimulationError("the simulation stopped before the trace's end: nothing was left " +
                            std::string("to happen, yet work was pending:\n") +
                            engine_.describe_in_flight());
    }
    job->finish();
  }
  return jobs_[0]->stats();
}

} // namespace faultline
