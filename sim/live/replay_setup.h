// What a live replay (replay.cc) settles before its timed loop and writes beside its results:
// the budget in 2 MB chunks, the refusal of a run the GPU has no room for, the call log and the
// resolved config. Errors are faultline::Error naming the option or file at fault.
#pragma once

#include "sim/live/device.h"
#include "sim/live/measured.h"
#include "sim/live/plan.h"
#include "sim/live/replay.h"
#include "sim/trace/inspect.h"

#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace faultline::live {

// The budget in chunks: --budget-bytes, else the fraction of the trace's footprint, rounded up;
// at least one.
uint64_t budget_chunks(const ReplayRequest& request, const trace::TraceStats& stats);

// Refuses a run whose managed and device memory (and touch list), or neighbour budget, would
// not fit in the GPU's free memory less the margin: the replay never oversubscribes.
void check_memory(const ReplayRequest& request, const trace::TraceStats& stats, const Plan& plan,
                  LiveDevice& device);

// --call-log's file, opened before the replay runs so that a path it cannot write fails at once;
// write_call_log fills it with a row per migration call.
std::ofstream open_call_log(const std::string& path);
void write_call_log(std::ofstream& out, const std::string& path,
                    const std::vector<CallRecord>& calls);

// The run's config as it was resolved: policy, budget in bytes, how faults and bytes were
// counted, the diagnosis switches set, the device.
nlohmann::json resolved_config(const ReplayRequest& request, uint64_t chunks, LiveDevice& device);

} // namespace faultline::live
