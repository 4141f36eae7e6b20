// A run's measured totals and per-step rows as the result document holds them, one type for
// both backends: the simulator fills it from its Stats, the live replay from what it measured.
// A field a backend cannot measure stays unset and is left out of the document. The JSON names
// are written once, in sim/run/results.cc, so both backends' results carry the same names.
#pragma once

#include <cstdint>
#include <optional>

namespace faultline {

using Measure = std::optional<int64_t>;

// The result document's "results": each field is declared with its unit and meaning in
// sim/run/result_fields.cc.
struct RunTotals {
  Measure total_time_ns, compute_ns, fault_stall_ns, host_fault_ns, host_fault_in_trace_ns;
  Measure kernels, accesses, accesses_outside_managed_memory, hits;
  Measure faults, duplicate_faults, faults_reported_to_policy, faults_outside_trace_memory;
  Measure policy_decision_ns, fault_actions_ns, copy_wait_ns, batches, batch_time_ns,
      va_blocks_serviced;
  Measure bytes_host_to_gpu, bytes_gpu_to_host, bytes_populated_on_gpu, bytes_populated_on_host;
  Measure link_to_gpu_busy_ns, link_to_host_busy_ns, link_both_busy_ns;
  Measure eviction_wait_ns, prefetch_wait_ns, stream_wait_ns, migration_gpu_ns;
  Measure evictions, policy_evicted_bytes, discarded_bytes;
  Measure prefetch_issued_bytes, prefetch_used_bytes, prefetch_wasted_bytes;
  Measure host_faults, thrashing_pins, remote_accesses, peak_gpu_chunks;
  Measure evictions_to_peer, bytes_to_peer, bytes_written_back, bytes_staged_on_peer;
  Measure bytes_from_peer, reclaims_dropped, reclaims_copied, bytes_device_to_device;
  Measure dropped_counter_records;
};

// One training step's row of the result document's "steps".
struct StepResult {
  Measure step, start_ns, end_ns, time_ns, compute_ns, fault_stall_ns, host_fault_ns;
  Measure kernels, accesses, faults, faults_reported_to_policy, batches;
  Measure bytes_host_to_gpu, bytes_gpu_to_host, evictions, prefetch_issued_bytes;
  Measure prefetch_used_bytes, program_ns, peak_resident_bytes, gpu_used_peak_bytes;
  Measure migration_gpu_ns, discarded_bytes;
};

} // namespace faultline
