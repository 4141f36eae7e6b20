#include "sim/run/results.h"

#include "sim/core/error.h"
#include "sim/run/simulator.h"
#include "sim/run/timeline.h"
#include "sim/trace/inspect.h"
#include "version.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

namespace faultline {
namespace {

// Prints at most one line a second on stderr; wall time never reaches the results.
class StderrProgress : public ProgressReporter {
public:
  void on_progress(uint64_t kernels, Time now, const Stats& s) override {
    const auto wall = std::chrono::steady_clock::now();
    if (wall - last_ < std::chrono::seconds(1)) return;
    last_ = wall;
    std::fprintf(
        stderr, "\r[faultline] %llu kernels, %.3f s simulated, %llu faults, %llu batches   ",
        static_cast<unsigned long long>(kernels), static_cast<double>(now) / 1e9,
        static_cast<unsigned long long>(s.faults), static_cast<unsigned long long>(s.batches));
    printed_ = true;
  }
  ~StderrProgress() override {
    if (printed_) std::fputc('\n', stderr);
  }

private:
  std::chrono::steady_clock::time_point last_{};
  bool printed_ = false;
};

nlohmann::json kernel_rows(const Stats& stats) {
  nlohmann::json rows = nlohmann::json::array();
  for (const KernelRow& k : stats.kernel_rows) {
    rows.push_back({{"index", k.index},
                    {"name", k.name},
                    {"start_ns", k.start},
                    {"end_ns", k.end},
                    {"compute_ns", k.compute_ns},
                    {"stall_ns", k.stall_ns},
                    {"accesses", k.accesses},
                    {"faults", k.faults}});
  }
  return rows;
}

} // namespace

const char* git_revision() {
  return FAULTLINE_GIT_REVISION;
}

nlohmann::json stats_json(const Stats& s, Time total_ns) {
  const auto bytes = [](uint64_t pages) { return pages * kPageSize; };
  return {
      {"total_time_ns", total_ns},
      {"compute_ns", s.compute_ns},
      {"fault_stall_ns", s.stall_ns},
      {"host_fault_ns", s.host_ns},
      {"kernels", s.kernels},
      {"accesses", s.accesses},
      {"hits", s.hits},
      {"faults", s.faults},
      {"duplicate_faults", s.duplicate_faults},
      {"batches", s.batches},
      {"batch_time_ns", s.batch_ns},
      {"va_blocks_serviced", s.blocks_serviced},
      {"bytes_host_to_gpu", bytes(s.pages_h2d)},
      {"bytes_gpu_to_host", bytes(s.pages_d2h)},
      {"bytes_populated_on_gpu", bytes(s.pages_populated)},
      {"evictions", s.evictions},
      {"policy_evicted_bytes", bytes(s.policy_evicted_pages)},
      {"discarded_bytes", bytes(s.discarded_pages)},
      {"prefetch",
       {{"issued_bytes", bytes(s.prefetch_issued)},
        {"used_bytes", bytes(s.prefetch_used)},
        {"wasted_bytes", bytes(s.prefetch_wasted)}}},
      {"host_faults", s.host_faults},
      {"thrashing_pins", s.thrashing_pins},
      {"remote_accesses", s.remote_accesses},
      {"peak_gpu_chunks", s.peak_chunks},
  };
}

nlohmann::json run_job(const SimJob& job) {
  config::RunConfig config = job.config_doc.is_null()
                                 ? config::load_run_config(job.config_path)
                                 : config::parse_run_config(job.config_doc, job.config_path);
  const trace::TraceStats trace_stats = trace::compute_stats(job.trace_path);
  uint64_t chunks = (config.capacity_bytes + kBlockSize - 1) / kBlockSize;
  if (config.capacity_fraction > 0) {
    const double wanted =
        config.capacity_fraction * static_cast<double>(trace_stats.footprint_chunks);
    chunks = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(wanted - 1e-9)));
  }
  config.resolved["capacity"]["resolved_bytes"] = chunks * kBlockSize;

  Simulator sim(config, job.trace_path, chunks);
  std::unique_ptr<Timeline> timeline;
  if (!job.timeline_path.empty()) {
    timeline = std::make_unique<Timeline>(job.timeline_path);
    sim.set_transfer_observer(timeline.get());
    sim.set_batch_observer(timeline.get());
    sim.set_kernel_observer(timeline.get());
  }
  StderrProgress progress;
  if (job.progress) sim.set_progress(&progress);
  sim.set_check_invariants(job.check_invariants);
  const Stats& stats = sim.run();
  if (timeline) timeline->close();

  nlohmann::json out;
  out["faultline"] = {{"git_revision", git_revision()}, {"trace_format_version", trace::kVersion}};
  out["trace"] = {{"path", job.trace_path},
                  {"metadata", sim.reader().metadata()},
                  {"footprint_bytes", trace_stats.footprint_bytes()}};
  out["config"] = config.resolved;
  out["results"] = stats_json(stats, sim.end_time());
  if (config.per_kernel) out["kernels"] = kernel_rows(stats);
  return out;
}

} // namespace faultline
