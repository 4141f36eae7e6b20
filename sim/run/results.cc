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
                    {"launched_ns", k.launched},
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

namespace {

template <class T> using FieldTable = std::vector<std::pair<const char*, Measure T::*>>;

// Each field's name in the document, once; "a.b" nests.
const FieldTable<RunTotals>& run_fields() {
  using R = RunTotals;
  static const FieldTable<R> table = {
      {"total_time_ns", &R::total_time_ns},
      {"compute_ns", &R::compute_ns},
      {"fault_stall_ns", &R::fault_stall_ns},
      {"host_fault_ns", &R::host_fault_ns},
      {"host_fault_in_trace_ns", &R::host_fault_in_trace_ns},
      {"kernels", &R::kernels},
      {"accesses", &R::accesses},
      {"accesses_outside_managed_memory", &R::accesses_outside_managed_memory},
      {"hits", &R::hits},
      {"faults", &R::faults},
      {"duplicate_faults", &R::duplicate_faults},
      {"faults_reported_to_policy", &R::faults_reported_to_policy},
      {"faults_outside_trace_memory", &R::faults_outside_trace_memory},
      {"policy_decision_ns", &R::policy_decision_ns},
      {"fault_actions_ns", &R::fault_actions_ns},
      {"copy_wait_ns", &R::copy_wait_ns},
      {"batches", &R::batches},
      {"batch_time_ns", &R::batch_time_ns},
      {"va_blocks_serviced", &R::va_blocks_serviced},
      {"bytes_host_to_gpu", &R::bytes_host_to_gpu},
      {"bytes_gpu_to_host", &R::bytes_gpu_to_host},
      {"bytes_populated_on_gpu", &R::bytes_populated_on_gpu},
      {"bytes_populated_on_host", &R::bytes_populated_on_host},
      {"link.to_gpu_busy_ns", &R::link_to_gpu_busy_ns},
      {"link.to_host_busy_ns", &R::link_to_host_busy_ns},
      {"link.both_busy_ns", &R::link_both_busy_ns},
      {"waits.eviction_ns", &R::eviction_wait_ns},
      {"waits.prefetch_in_flight_ns", &R::prefetch_wait_ns},
      {"waits.migration_stream_ns", &R::stream_wait_ns},
      {"migration_gpu_ns", &R::migration_gpu_ns},
      {"evictions", &R::evictions},
      {"policy_evicted_bytes", &R::policy_evicted_bytes},
      {"discarded_bytes", &R::discarded_bytes},
      {"prefetch.issued_bytes", &R::prefetch_issued_bytes},
      {"prefetch.used_bytes", &R::prefetch_used_bytes},
      {"prefetch.wasted_bytes", &R::prefetch_wasted_bytes},
      {"host_faults", &R::host_faults},
      {"thrashing_pins", &R::thrashing_pins},
      {"remote_accesses", &R::remote_accesses},
      {"peak_gpu_chunks", &R::peak_gpu_chunks},
      {"peers.evictions_to_peer", &R::evictions_to_peer},
      {"peers.bytes_to_peer", &R::bytes_to_peer},
      {"peers.bytes_written_back", &R::bytes_written_back},
      {"peers.bytes_staged_on_peer", &R::bytes_staged_on_peer},
      {"peers.bytes_from_peer", &R::bytes_from_peer},
      {"peers.reclaims_dropped", &R::reclaims_dropped},
      {"peers.reclaims_copied", &R::reclaims_copied},
      {"peers.bytes_device_to_device", &R::bytes_device_to_device},
      {"dropped_counter_records", &R::dropped_counter_records},
  };
  return table;
}

const FieldTable<StepResult>& step_fields() {
  using S = StepResult;
  static const FieldTable<S> table = {
      {"step", &S::step},
      {"start_ns", &S::start_ns},
      {"end_ns", &S::end_ns},
      {"time_ns", &S::time_ns},
      {"compute_ns", &S::compute_ns},
      {"fault_stall_ns", &S::fault_stall_ns},
      {"host_fault_ns", &S::host_fault_ns},
      {"kernels", &S::kernels},
      {"accesses", &S::accesses},
      {"faults", &S::faults},
      {"faults_reported_to_policy", &S::faults_reported_to_policy},
      {"batches", &S::batches},
      {"bytes_host_to_gpu", &S::bytes_host_to_gpu},
      {"bytes_gpu_to_host", &S::bytes_gpu_to_host},
      {"evictions", &S::evictions},
      {"prefetch_issued_bytes", &S::prefetch_issued_bytes},
      {"prefetch_used_bytes", &S::prefetch_used_bytes},
      {"program_ns", &S::program_ns},
      {"peak_resident_bytes", &S::peak_resident_bytes},
      {"gpu_used_peak_bytes", &S::gpu_used_peak_bytes},
      {"migration_gpu_ns", &S::migration_gpu_ns},
      {"discarded_bytes", &S::discarded_bytes},
  };
  return table;
}

template <class T> nlohmann::json write(const T& values, const FieldTable<T>& table) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [path, member] : table) {
    const Measure& m = values.*member;
    if (!m) continue;
    const std::string p = path;
    const size_t dot = p.find('.');
    if (dot == std::string::npos)
      out[p] = *m;
    else
      out[p.substr(0, dot)][p.substr(dot + 1)] = *m;
  }
  return out;
}

} // namespace

nlohmann::json totals_json(const RunTotals& totals) {
  return write(totals, run_fields());
}

nlohmann::json step_json(const StepResult& row) {
  return write(row, step_fields());
}

std::vector<std::string> written_paths() {
  std::vector<std::string> out;
  for (const auto& f : run_fields()) out.push_back(std::string("results.") + f.first);
  for (const auto& f : step_fields()) out.push_back(std::string("steps[].") + f.first);
  return out;
}

RunTotals totals_of(const Stats& s, Time total_ns) {
  const auto bytes = [](uint64_t pages) { return static_cast<int64_t>(pages * kPageSize); };
  const auto n = [](uint64_t count) { return static_cast<int64_t>(count); };
  RunTotals t;
  t.total_time_ns = total_ns;
  t.compute_ns = s.compute_ns;
  t.fault_stall_ns = s.stall_ns;
  t.host_fault_ns = s.host_ns;
  t.host_fault_in_trace_ns = s.host_in_trace_ns;
  t.kernels = n(s.kernels);
  t.accesses = n(s.accesses);
  t.hits = n(s.hits);
  t.faults = n(s.faults);
  t.duplicate_faults = n(s.duplicate_faults);
  t.batches = n(s.batches);
  t.batch_time_ns = s.batch_ns;
  t.va_blocks_serviced = n(s.blocks_serviced);
  t.bytes_host_to_gpu = bytes(s.pages_h2d);
  t.bytes_gpu_to_host = bytes(s.pages_d2h);
  t.bytes_populated_on_gpu = bytes(s.pages_populated);
  t.bytes_populated_on_host = bytes(s.pages_populated_on_host);
  t.link_to_gpu_busy_ns = s.link_to_gpu_busy_ns;
  t.link_to_host_busy_ns = s.link_to_host_busy_ns;
  t.link_both_busy_ns = s.link_both_busy_ns;
  t.eviction_wait_ns = s.eviction_wait_ns;
  t.prefetch_wait_ns = s.prefetch_wait_ns;
  t.stream_wait_ns = s.stream_wait_ns;
  if (s.migration_stream) t.migration_gpu_ns = s.migration_ns;
  t.evictions = n(s.evictions);
  t.policy_evicted_bytes = bytes(s.policy_evicted_pages);
  t.discarded_bytes = bytes(s.discarded_pages);
  t.prefetch_issued_bytes = bytes(s.prefetch_issued);
  t.prefetch_used_bytes = bytes(s.prefetch_used);
  t.prefetch_wasted_bytes = bytes(s.prefetch_wasted);
  t.host_faults = n(s.host_faults);
  t.thrashing_pins = n(s.thrashing_pins);
  t.remote_accesses = n(s.remote_accesses);
  t.peak_gpu_chunks = n(s.peak_chunks);
  t.evictions_to_peer = n(s.peer_evictions);
  t.bytes_to_peer = bytes(s.pages_to_peer);
  t.bytes_written_back = bytes(s.pages_written_back);
  t.bytes_staged_on_peer = bytes(s.pages_staged);
  t.bytes_from_peer = bytes(s.pages_peer_in);
  t.reclaims_dropped = n(s.reclaims_dropped);
  t.reclaims_copied = n(s.reclaims_copied);
  return t;
}

nlohmann::json stats_json(const Stats& s, Time total_ns) {
  return totals_json(totals_of(s, total_ns));
}

nlohmann::json step_rows_json(const std::vector<StepRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  const auto bytes = [](uint64_t pages) { return static_cast<int64_t>(pages * kPageSize); };
  const auto n = [](uint64_t count) { return static_cast<int64_t>(count); };
  for (const StepRow& r : rows) {
    StepResult s;
    s.step = r.step;
    s.start_ns = r.start;
    s.end_ns = r.end;
    s.time_ns = r.end - r.start;
    s.compute_ns = r.compute_ns;
    s.fault_stall_ns = r.stall_ns;
    s.host_fault_ns = r.host_ns;
    s.kernels = n(r.kernels);
    s.accesses = n(r.accesses);
    s.faults = n(r.faults);
    s.batches = n(r.batches);
    s.bytes_host_to_gpu = bytes(r.pages_h2d);
    s.bytes_gpu_to_host = bytes(r.pages_d2h);
    s.evictions = n(r.evictions);
    s.prefetch_issued_bytes = bytes(r.prefetch_issued);
    s.prefetch_used_bytes = bytes(r.prefetch_used);
    if (r.migration_stream) s.migration_gpu_ns = r.migration_ns;
    if (r.program_ns > 0) s.program_ns = r.program_ns;
    out.push_back(step_json(s));
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

nlohmann::json run_sim(const SimRequest& request) {
  config::RunConfig config =
      request.config_doc.is_null()
          ? config::load_run_config(request.config_path)
          : config::parse_run_config(request.config_doc, request.config_path);
  if (request.iterations > 0) {
    config.iterations = request.iterations;
    config.resolved["iterations"] = request.iterations;
  }
  const trace::TraceStats trace_stats = trace::compute_stats(request.trace_path);
  const uint64_t chunks = config.capacity.chunks(trace_stats.footprint_chunks);
  config.resolved["capacity"]["resolved_bytes"] = chunks * kBlockSize;

  Simulator sim(config, request.trace_path, chunks);
  std::unique_ptr<Timeline> timeline;
  if (!request.timeline_path.empty()) {
    timeline = std::make_unique<Timeline>(request.timeline_path);
    sim.set_transfer_observer(timeline.get());
    sim.set_batch_observer(timeline.get());
    sim.set_kernel_observer(timeline.get());
  }
  StderrProgress progress;
  if (request.progress) sim.set_progress(&progress);
  sim.set_check_invariants(request.check_invariants);
  const Stats& stats = sim.run();
  if (timeline) timeline->close();

  nlohmann::json out;
  out["backend"] = "sim";
  out["faultline"] = {{"git_revision", git_revision()}, {"trace_format_version", trace::kVersion}};
  out["trace"] = {{"path", request.trace_path},
                  {"format_version", sim.reader().version()},
                  {"timeline", trace::to_string(sim.reader().timeline())},
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
