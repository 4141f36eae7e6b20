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
      {"peers",
       {{"evictions_to_peer", s.peer_evictions},
        {"bytes_to_peer", bytes(s.pages_to_peer)},
        {"bytes_written_back", bytes(s.pages_written_back)},
        {"bytes_staged_on_peer", bytes(s.pages_staged)},
        {"bytes_from_peer", bytes(s.pages_peer_in)},
        {"reclaims_dropped", s.reclaims_dropped},
        {"reclaims_copied", s.reclaims_copied}}},
  };
}

nlohmann::json step_rows_json(const std::vector<StepRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  const auto bytes = [](uint64_t pages) { return pages * kPageSize; };
  for (const StepRow& r : rows) {
    out.push_back({{"step", r.step},
                   {"start_ns", r.start},
                   {"end_ns", r.end},
                   {"time_ns", r.end - r.start},
                   {"compute_ns", r.compute_ns},
                   {"fault_stall_ns", r.stall_ns},
                   {"host_fault_ns", r.host_ns},
                   {"kernels", r.kernels},
                   {"accesses", r.accesses},
                   {"faults", r.faults},
                   {"batches", r.batches},
                   {"bytes_host_to_gpu", bytes(r.pages_h2d)},
                   {"bytes_gpu_to_host", bytes(r.pages_d2h)},
                   {"evictions", r.evictions},
                   {"prefetch_issued_bytes", bytes(r.prefetch_issued)},
                   {"prefetch_used_bytes", bytes(r.prefetch_used)}});
  }
  return out;
}

nlohmann::json iterations_json(const trace::StepRepeater& steps) {
  const trace::RepeatStats& s = steps.repeat_stats();
  return {{"used", steps.iterations()},         {"captured_steps", steps.captured_steps()},
          {"repetitions", s.repetitions},       {"period_ns", s.period_ns},
          {"paired_frees", s.paired_frees},     {"early_frees", s.early_frees},
          {"skipped_frees", s.skipped_frees},   {"held_frees", s.held_frees},
          {"skipped_allocs", s.skipped_allocs}, {"dropped_args", s.dropped_args}};
}

nlohmann::json run_job(const SimJob& job) {
  config::RunConfig config = job.config_doc.is_null()
                                 ? config::load_run_config(job.config_path)
                                 : config::parse_run_config(job.config_doc, job.config_path);
  if (job.iterations > 0) {
    config.iterations = job.iterations;
    config.resolved["iterations"] = job.iterations;
  }
  const trace::TraceStats trace_stats = trace::compute_stats(job.trace_path);
  const uint64_t chunks = config.capacity.chunks(trace_stats.footprint_chunks);
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
  for (size_t i = 1; i < sim.jobs(); ++i) {
    const Job& other = sim.job(i);
    config.resolved["neighbour_jobs"][i - 1]["capacity"]["resolved_bytes"] =
        sim.capacity_chunks(other.setup().gpu) * kBlockSize;
  }
  out["config"] = config.resolved;
  out["results"] = stats_json(stats, sim.end_time());
  out["iterations"] = iterations_json(sim.reader());
  out["steps"] = step_rows_json(stats.step_rows);
  if (config.per_kernel) out["kernels"] = kernel_rows(stats);
  for (size_t i = 1; i < sim.jobs(); ++i) {
    const Job& other = sim.job(i);
    out["neighbour_jobs"].push_back({{"name", other.setup().name},
                                     {"gpu", other.setup().gpu},
                                     {"trace", other.setup().trace_path},
                                     {"passes", other.passes()},
                                     {"results", stats_json(other.stats(), other.end_time())}});
  }
  return out;
}

} // namespace faultline
