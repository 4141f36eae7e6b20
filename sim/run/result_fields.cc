#include "sim/run/result_fields.h"

#include <algorithm>

namespace faultline {
namespace {

// The live replay's per-kernel rows count each kind of migration call (sim/live/measured.h,
// MigrationCalls), three fields a kind.
std::vector<ResultField> call_fields() {
  const std::pair<const char*, const char*> kinds[] = {
      {"to_gpu", "prefetches to the GPU"},
      {"to_gpu_held", "prefetches of pages the replay's books hold on the GPU already"},
      {"to_host", "evictions to the host"},
      {"to_peer", "moves to the next GPU"},
      {"discard", "discards"}};
  std::vector<ResultField> out;
  for (const auto& [kind, what] : kinds) {
    const std::string k = std::string("kernels[].") + kind;
    out.push_back({k + "_calls", "count", "live",
                   std::string("per_kernel: ") + what +
                       " issued since the row before (one call per run of pages)"});
    out.push_back({k + "_bytes", "bytes", "live", "per_kernel: their bytes"});
    out.push_back({k + "_cpu_ns", "ns", "live", "per_kernel: the CPU's time inside those calls"});
  }
  return out;
}

// Paths ending in ".*" are free-form objects: what lies under them is described by their own
// documents (traces/FORMAT.md for the trace header, configs/README.md for the config).
std::vector<ResultField> declare() {
  std::vector<ResultField> fields = {
      {"backend", "text", "all",
       "what measured it: \"sim\" (the simulator), \"replay\" (the live replay of a trace) or "
       "\"program\" (faultline run: the program itself, the policy inside it)"},
      {"faultline.git_revision", "text", "all", "the revision of the binary that wrote it"},
      {"faultline.trace_format_version", "count", "both", "the trace format version it reads"},
      {"trace.path", "text", "both", "the trace file"},
      {"trace.format_version", "count", "both", "the format version of the trace file"},
      {"trace.timeline", "text", "both",
       "what its record times are: \"issue\" (the CPU's issue times: the CPU runs ahead of the "
       "GPU, syncs wait for it) or \"serial\" (gaps as recorded, each record after the kernel "
       "before it: format version 1 and synthetic traces)"},
      {"trace.footprint_bytes", "bytes", "both",
       "peak of live 2 MB chunks spanned by managed and device allocations"},
      {"trace.metadata.*", "JSON", "sim", "the trace's header (traces/FORMAT.md)"},
      {"config.*", "JSON", "both",
       "the resolved run config (sim) or replay request (live), every default filled in"},
      {"results.total_time_ns", "ns", "both", "the run's time, first record to last kernel's end"},
      {"results.compute_ns", "ns", "both", "the kernels' recorded all-resident durations, summed"},
      {"results.fault_stall_ns", "ns", "both", "kernel time beyond its recorded duration"},
      {"results.host_fault_ns", "ns", "sim",
       "time the host spent in its own page faults: taking GPU-resident pages back, populating "
       "never-touched ones"},
      {"results.host_fault_in_trace_ns", "ns", "sim",
       "of the trace's CPU gaps (issue timeline), what the host's faults took in the captured "
       "program (on pages its kernels had left on the GPU): the run plays its own host_fault_ns "
       "in their place"},
      {"results.kernels", "count", "both", "kernels run (copies and memsets included)"},
      {"results.accesses", "count", "both", "64 KB accesses the kernels made"},
      {"results.accesses_outside_managed_memory", "count", "live",
       "accesses outside managed allocations, not replayed"},
      {"results.hits", "count", "sim", "accesses that found their page on the GPU"},
      {"results.faults", "count", "both",
       "sim: fault-buffer entries the kernels raised; live: CUPTI's GPU fault records (each may "
       "stand for a group of faults; the replay with --counters only)"},
      {"results.duplicate_faults", "count", "sim", "entries coalesced away inside a batch"},
      {"results.faults_reported_to_policy", "count", "live",
       "faults handed to a policy that watches them"},
      {"results.faults_outside_trace_memory", "count", "live",
       "fault records at addresses no trace allocation holds"},
      {"results.policy_decision_ns", "ns", "live",
       "time the policy took to decide (off the clock)"},
      {"results.fault_actions_ns", "ns", "live",
       "time spent issuing the actions a policy took on a kernel's faults (on the clock, part of "
       "total_time_ns: a migration call blocks the CPU)"},
      {"results.copy_wait_ns", "ns", "live",
       "time the kernels waited on the GPU for the migrations issued before them (part of "
       "fault_stall_ns: each kernel is launched behind the copy stream)"},
      {"results.batches", "count", "sim", "fault batches serviced"},
      {"results.batch_time_ns", "ns", "sim", "service time of all batches, summed"},
      {"results.va_blocks_serviced", "count", "sim",
       "2 MB VA blocks serviced, summed over batches"},
      {"results.bytes_host_to_gpu", "bytes", "both",
       "migrated to the GPU (the replay: with --counters only)"},
      {"results.bytes_gpu_to_host", "bytes", "both",
       "migrated back to the host (the replay: with --counters only)"},
      {"results.bytes_populated_on_gpu", "bytes", "sim",
       "first touched on the GPU, populated in place with no copy"},
      {"results.bytes_populated_on_host", "bytes", "sim",
       "never touched, populated on the host by an eviction call over their chunk (the GPU's "
       "next touch migrates them)"},
      {"results.link.to_gpu_busy_ns", "ns", "sim",
       "time the GPU's link from the host carried a copy (the GPU's jobs together)"},
      {"results.link.to_host_busy_ns", "ns", "sim",
       "time the GPU's link to the host carried a copy (the GPU's jobs together)"},
      {"results.link.both_busy_ns", "ns", "sim",
       "time both directions carried a copy at once: the duplex overlap"},
      {"results.waits.eviction_ns", "ns", "sim",
       "evictions waited for: inside fault batches (driver mode), or the budget's before a "
       "kernel (budget and program modes)"},
      {"results.waits.prefetch_in_flight_ns", "ns", "sim",
       "fault batches' wait, beyond their own work, for copies already on their way to the "
       "faulted pages (a prefetch or an earlier batch arriving late)"},
      {"results.waits.migration_stream_ns", "ns", "sim",
       "budget and program modes: kernels' wait for the migrations issued before them"},
      {"results.evictions", "2 MB chunks", "both",
       "chunks evicted on the fault path (driver mode) or to keep the budget"},
      {"results.policy_evicted_bytes", "bytes", "both",
       "evicted by the policy's own actions (sim: the bytes that were on the GPU; live: the bytes "
       "the eviction calls name, pages the books hold discarded left out)"},
      {"results.discarded_bytes", "bytes", "both", "dropped by the policy without a copy"},
      {"results.prefetch.issued_bytes", "bytes", "both",
       "brought to the GPU ahead of a fault (density prefetch or policy)"},
      {"results.prefetch.used_bytes", "bytes", "sim", "of those, touched by a kernel later"},
      {"results.prefetch.wasted_bytes", "bytes", "sim",
       "of those, evicted, discarded or never touched"},
      {"results.host_faults", "count", "sim", "64 KB big pages the host pulled back"},
      {"results.thrashing_pins", "count", "sim", "pages the driver pinned as thrashing"},
      {"results.remote_accesses", "count", "sim", "accesses served remotely, without a migration"},
      {"results.peak_gpu_chunks", "2 MB chunks", "both", "most chunks resident at once"},
      {"results.peers.evictions_to_peer", "2 MB chunks", "both", "evicted to a neighbour GPU"},
      {"results.peers.bytes_to_peer", "bytes", "both", "moved to a neighbour GPU"},
      {"results.peers.bytes_written_back", "bytes", "sim",
       "copied from a neighbour to the host in the background"},
      {"results.peers.bytes_staged_on_peer", "bytes", "both",
       "host data staged on a neighbour ahead of use (multi-path prefetch)"},
      {"results.peers.bytes_from_peer", "bytes", "sim", "fetched from a neighbour to this GPU"},
      {"results.peers.bytes_device_to_device", "bytes", "live",
       "CUPTI's device-to-device migrations (both directions; with --counters)"},
      {"results.peers.reclaims_dropped", "count", "sim",
       "another job's chunks a neighbour dropped (host copy current)"},
      {"results.peers.reclaims_copied", "count", "sim",
       "another job's chunks a neighbour evicted to the host first"},
      {"results.dropped_counter_records", "count", "live",
       "CUPTI records lost for want of room (with --counters)"},
      {"iterations.used", "count", "both", "training steps run"},
      {"iterations.captured_steps", "count", "both", "steps the trace holds"},
      {"iterations.repetitions", "count", "both", "passes of the last step beyond the trace"},
      {"iterations.period_ns", "ns", "both", "time shift between repeated passes"},
      {"iterations.paired_frees", "count", "both",
       "frees of allocations made before the step, paired with the last pass's copy"},
      {"iterations.early_frees", "count", "both",
       "copies freed where the step allocates over them"},
      {"iterations.skipped_frees", "count", "both", "frees with nothing to pair, dropped"},
      {"iterations.held_frees", "count", "both",
       "frees of the trace's own pass held for the final one (tear-down)"},
      {"iterations.skipped_allocs", "count", "both", "blocks whose segment did not resolve"},
      {"iterations.dropped_args", "count", "both", "kernel arguments naming no live allocation"},
      {"steps[].step", "count", "both", "the training step; -1 is the set-up before step 0"},
      {"steps[].start_ns", "ns", "both", "where the step's row begins"},
      {"steps[].end_ns", "ns", "both", "where it ends (the next step's start)"},
      {"steps[].time_ns", "ns", "both", "end minus start"},
      {"steps[].compute_ns", "ns", "both", "as results.compute_ns, for the step"},
      {"steps[].fault_stall_ns", "ns", "both", "as results.fault_stall_ns, for the step"},
      {"steps[].host_fault_ns", "ns", "sim", "as results.host_fault_ns, for the step"},
      {"steps[].kernels", "count", "both", "as results.kernels, for the step"},
      {"steps[].accesses", "count", "both", "as results.accesses, for the step"},
      {"steps[].faults", "count", "both", "as results.faults, for the step"},
      {"steps[].faults_reported_to_policy", "count", "live",
       "as results.faults_reported_to_policy, for the step"},
      {"steps[].batches", "count", "sim", "as results.batches, for the step"},
      {"steps[].bytes_host_to_gpu", "bytes", "both", "as results.bytes_host_to_gpu, for the step"},
      {"steps[].bytes_gpu_to_host", "bytes", "both", "as results.bytes_gpu_to_host, for the step"},
      {"steps[].evictions", "2 MB chunks", "both", "as results.evictions, for the step"},
      {"steps[].prefetch_issued_bytes", "bytes", "both",
       "as results.prefetch.issued_bytes, for the step"},
      {"steps[].discarded_bytes", "bytes", "live",
       "as results.discarded_bytes, for the step (faultline run)"},
      {"steps[].prefetch_used_bytes", "bytes", "sim",
       "as results.prefetch.used_bytes, for the step"},
      {"steps[].program_ns", "ns", "both",
       "the program's own time for the step as captured (the trace's program_step_ns; "
       "repetitions: its last step's); absent where the trace has none"},
      {"results.run_library_ns", "ns", "program",
       "CPU time the injection library spent in its callbacks inside the program's CUDA calls, "
       "run_hooks_ns included (not CUPTI's own dispatch): what faultline run adds to the "
       "program's CPU"},
      {"results.policy_start_ns", "ns", "program",
       "CPU time the policy took to start (the oracle reads its trace then), once, before the "
       "program's first CUDA call returns; not part of policy_decision_ns"},
      {"results.run_hooks_ns", "ns", "program",
       "CPU time the policy host took in the library's hooks: the books, the budget and the "
       "policy's decisions (policy_decision_ns)"},
      {"results.gpu_used_peak_bytes", "bytes", "program",
       "as steps[].gpu_used_peak_bytes, over the run"},
      {"results.migration_gpu_ns", "ns", "sim",
       "budget and program modes: the time the migration stream was busy with the budget's and "
       "the policy's evictions, prefetches and discards; in the program measured by events on "
       "the library's stream, from the first of each run of migrations a hook issued (no "
       "ordering call between) starting to its last done, summed"},
      {"steps[].migration_gpu_ns", "ns", "sim",
       "as results.migration_gpu_ns, for the step (program: the runs done by the call that "
       "closes it; those the GPU has not done yet count in the next step)"},
      {"steps[].peak_resident_bytes", "bytes", "program",
       "the most managed memory the run's books held on the GPU during the step (the budget "
       "bounds it; config.budget_bytes beside it)"},
      {"steps[].gpu_used_peak_bytes", "bytes", "program",
       "the most GPU memory in use at the program's synchronisations in the step, less what was "
       "in use at its first allocation and its device memory: the GPU memory the driver holds "
       "for managed pages, which keeps a 2 MB chunk for its pages after they go to the host, so "
       "it counts the pages ever resident, not those resident now"},
      {"program.*", "JSON", "program",
       "the program run: its command, exit status, the GPU, the injection library's counts"},
      {"kernels[].index", "count", "all", "per_kernel: the kernel's place in the run"},
      {"kernels[].name", "text", "all", "per_kernel: its name"},
      {"kernels[].start_ns", "ns", "all",
       "per_kernel: when it started (replay: when it began to make room for it; program: on the "
       "GPU, from the first operation's start)"},
      {"kernels[].launched_ns", "ns", "sim",
       "per_kernel: when the host asked for it, before the budget's evictions for it (where the "
       "live replay's start_ns is)"},
      {"kernels[].end_ns", "ns", "all", "per_kernel: when it ended"},
      {"kernels[].gpu_ns", "ns", "live",
       "per_kernel: its time on the GPU, measured (faultline run --per-kernel too: CUPTI's "
       "record, null where it has none)"},
      {"kernels[].compute_ns", "ns", "both", "per_kernel: its recorded all-resident duration"},
      {"kernels[].stall_ns", "ns", "both", "per_kernel: its time beyond that"},
      {"kernels[].copy_wait_ns", "ns", "live",
       "per_kernel: of its stall, the wait for the migrations issued before it"},
      {"kernels[].accesses", "count", "both", "per_kernel: its 64 KB accesses"},
      {"kernels[].faults", "count", "sim", "per_kernel: the fault-buffer entries it raised"},
      {"kernels[].faults_reported", "count", "live", "per_kernel: the faults handed to the policy"},
      {"kernels[].gpu_faults", "count", "program",
       "--um-counters: CUPTI's GPU fault groups that began while it ran"},
      {"kernels[].fault_records", "count", "program", "--um-counters: the records of those"},
      {"kernels[].bytes_host_to_gpu", "bytes", "program",
       "--um-counters: CUPTI's migrations to the GPU that began while it ran"},
      {"kernels[].bytes_gpu_to_host", "bytes", "program", "--um-counters: and back to the host"},
      {"neighbour_jobs[].name", "text", "sim", "a neighbour job's name"},
      {"neighbour_jobs[].gpu", "count", "sim", "the GPU it runs on"},
      {"neighbour_jobs[].trace", "text", "sim", "its trace"},
      {"neighbour_jobs[].passes", "count", "sim", "times its trace ran during the run"},
      {"neighbour_jobs[].results.*", "JSON", "sim", "its results, fields as under results"},
  };
  const auto rows = std::find_if(fields.begin(), fields.end(), [](const ResultField& f) {
    return f.path == "kernels[].faults_reported";
  });
  const std::vector<ResultField> calls = call_fields();
  fields.insert(rows + 1, calls.begin(), calls.end());
  return fields;
}

} // namespace

const std::vector<ResultField>& result_fields() {
  static const std::vector<ResultField> fields = declare();
  return fields;
}

std::string result_fields_markdown() {
  std::string out = "| field | unit | written by | meaning |\n|---|---|---|---|\n";
  for (const ResultField& f : result_fields())
    out += "| `" + f.path + "` | " + f.unit + " | " + f.backends + " | " + f.meaning + " |\n";
  return out;
}

bool result_field_declared(const std::string& path) {
  for (const ResultField& f : result_fields()) {
    if (f.path == path) return true;
    const bool free_form = f.path.size() > 2 && f.path.compare(f.path.size() - 2, 2, ".*") == 0;
    if (free_form && path.compare(0, f.path.size() - 1, f.path, 0, f.path.size() - 1) == 0)
      return true;
  }
  return false;
}

} // namespace faultline
