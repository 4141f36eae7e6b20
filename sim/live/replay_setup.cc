#include "sim/live/replay_setup.h"

#include "sim/core/error.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace faultline::live {

uint64_t budget_chunks(const ReplayRequest& request, const trace::TraceStats& stats) {
  if (request.budget_bytes > 0) return std::max<uint64_t>(1, request.budget_bytes / kBlockSize);
  const double wanted = request.budget_fraction * static_cast<double>(stats.footprint_chunks);
  return std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(wanted - 1e-9)));
}

void check_memory(const ReplayRequest& request, const trace::TraceStats& stats, const Plan& plan,
                  LiveDevice& device) {
  const uint64_t free = device.free_bytes();
  const uint64_t need =
      stats.peak_managed_bytes + stats.peak_device_bytes + plan.touches.size() * sizeof(Touch);
  if (need + request.margin > free) {
    throw Error("faultline replay: refusing to run " + request.trace_path + ": it needs " +
                std::to_string(need) + " bytes of managed and device memory, and the GPU has " +
                std::to_string(free) + " bytes free, less the margin of " +
                std::to_string(request.margin) + " bytes (--margin)");
  }
  if (request.peer_budget_bytes == 0) return;
  const uint64_t peer_free = device.peer_free_bytes();
  if (request.peer_budget_bytes + request.margin > peer_free) {
    throw Error("faultline replay: refusing a neighbour budget of " +
                std::to_string(request.peer_budget_bytes) + " bytes: the next GPU has " +
                std::to_string(peer_free) + " bytes free (none if there is no next GPU), less " +
                "the margin of " + std::to_string(request.margin) + " bytes (--margin)");
  }
}

namespace {

// The live backend's diagnosis switches (sim/live/command.cc, sim/live/cuda/cuda_device.cu) that
// were set: they change what CUPTI records and when it is drained.
nlohmann::json device_switches() {
  nlohmann::json out = nlohmann::json::object();
  for (const char* name : {"FAULTLINE_LIVE_FAULT_RECORDS", "FAULTLINE_LIVE_AFTER_EVICT"})
    if (const char* value = std::getenv(name)) out[name] = value;
  return out;
}

} // namespace

std::ofstream open_call_log(const std::string& path) {
  std::ofstream out(path);
  if (!out) throw Error("faultline replay: --call-log " + path + ": cannot write the file");
  return out;
}

void write_call_log(std::ofstream& out, const std::string& path,
                    const std::vector<CallRecord>& calls) {
  out << "kernel,kind,address,bytes,start_ns,cpu_ns\n";
  for (const CallRecord& c : calls)
    out << c.kernel << ',' << c.kind << ',' << c.address << ',' << c.bytes << ',' << c.start_ns
        << ',' << c.cpu_ns << '\n';
  if (!out) throw Error("faultline replay: --call-log " + path + ": cannot write the file");
}

nlohmann::json resolved_config(const ReplayRequest& request, uint64_t chunks, LiveDevice& device) {
  return {
      {"policy", {{"name", request.policy}, {"params", request.policy_params}}},
      {"budget",
       {{"fraction_of_footprint",
         request.budget_bytes ? nlohmann::json() : nlohmann::json(request.budget_fraction)},
        {"bytes", request.budget_bytes ? nlohmann::json(request.budget_bytes) : nlohmann::json()},
        {"resolved_bytes", chunks * kBlockSize}}},
      {"margin", request.margin},
      {"faults", request.fault_source == ReplayRequest::FaultSource::kBooks ? "books" : "cupti"},
      {"drain_every", request.fault_source == ReplayRequest::FaultSource::kBooks
                          ? nlohmann::json()
                          : nlohmann::json(request.drain_every)},
      // When CUPTI's byte records were drained: only drained runs count every byte.
      {"counters_drained", request.eviction_bytes   ? "around every eviction and after every kernel"
                           : request.drain_counters ? "after every kernel"
                                                    : "at step boundaries"},
      {"cupti_counters", request.counters},
      {"device_switches", device_switches()},
      {"peer_budget_bytes", request.peer_budget_bytes},
      {"peer_reserve_bytes", request.peer_reserve_bytes},
      {"device", device.name()}};
}

} // namespace faultline::live
