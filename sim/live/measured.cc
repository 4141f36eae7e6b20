#include "sim/live/measured.h"

namespace faultline::live {

StepResult StepMark::row_since(const StepMark& from, int64_t step, bool counted) const {
  const Counters& a = from.counters;
  const auto n = [](uint64_t to, uint64_t since) { return static_cast<int64_t>(to - since); };
  StepResult r;
  r.step = step;
  r.start_ns = from.start;
  r.end_ns = start;
  r.time_ns = start - from.start;
  r.compute_ns = compute_ns - from.compute_ns;
  r.fault_stall_ns = stall_ns - from.stall_ns;
  r.kernels = n(kernels, from.kernels);
  r.accesses = n(accesses, from.accesses);
  r.faults_reported_to_policy = n(reported_faults, from.reported_faults);
  if (counted) {
    r.faults = n(counters.gpu_fault_records, a.gpu_fault_records);
    r.bytes_host_to_gpu = n(counters.bytes_host_to_gpu, a.bytes_host_to_gpu);
    r.bytes_gpu_to_host = n(counters.bytes_gpu_to_host, a.bytes_gpu_to_host);
  }
  r.evictions = n(evictions, from.evictions);
  r.prefetch_issued_bytes = n(prefetch_bytes, from.prefetch_bytes);
  return r;
}

RunTotals totals_of(const Measured& m, const Counters& c, bool counted, Time total,
                    uint64_t skipped, uint64_t peak_chunks) {
  const auto n = [](uint64_t count) { return static_cast<int64_t>(count); };
  RunTotals t;
  t.total_time_ns = total;
  t.compute_ns = m.compute_ns;
  t.fault_stall_ns = m.stall_ns;
  t.kernels = n(m.kernels);
  t.accesses = n(m.accesses);
  t.accesses_outside_managed_memory = n(skipped);
  t.faults_reported_to_policy = n(m.reported_faults);
  t.faults_outside_trace_memory = n(m.unmapped_faults);
  t.policy_decision_ns = m.policy_ns;
  t.fault_actions_ns = m.fault_actions_ns;
  t.copy_wait_ns = m.copy_wait_ns;
  t.evictions = n(m.budget_evicted_chunks);
  t.policy_evicted_bytes = n(m.policy_evicted_bytes);
  t.discarded_bytes = n(m.discarded_bytes);
  t.prefetch_issued_bytes = n(m.prefetch_bytes);
  t.peak_gpu_chunks = n(peak_chunks);
  t.evictions_to_peer = n(m.peer_evicted_chunks);
  t.bytes_to_peer = n(m.bytes_to_peer);
  t.bytes_staged_on_peer = n(m.bytes_staged);
  if (counted) {
    t.faults = n(c.gpu_fault_records);
    t.bytes_host_to_gpu = n(c.bytes_host_to_gpu);
    t.bytes_gpu_to_host = n(c.bytes_gpu_to_host);
    t.bytes_device_to_device = n(c.bytes_peer);
    t.dropped_counter_records = n(c.dropped_records);
  }
  return t;
}

} // namespace faultline::live
