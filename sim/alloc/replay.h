// Replays an allocation history through allocator models and reports what each reserved:
// peak allocated, requested and reserved bytes, fragmentation (1 - peak allocated / peak
// reserved), the driver calls as cost, and the usage over the history.
#pragma once

#include "sim/alloc/allocator.h"
#include "sim/alloc/history.h"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace faultline::alloc {

struct ReplayConfig {
  std::vector<std::string> allocators = {"caching", "expandable", "gmlake"};
  Bytes capacity = 0; // physical bytes the driver grants; 0: unlimited
  Options options;
  int device = -1;
  bool check_invariants = false; // check every model and every live block after each event
};

// Strict reading of an alloc config file (configs/alloc/); `resolved` receives every value,
// defaults included. Unknown keys, wrong types and unknown allocator names name their JSON path.
ReplayConfig read_replay_config(const nlohmann::json& doc, const std::string& file,
                                nlohmann::json& resolved);

struct TimelinePoint {
  Time time = 0;
  Bytes allocated = 0, reserved = 0;
};

struct ModelResult {
  std::string allocator;
  Usage usage;
  DriverCalls calls;
  std::vector<std::pair<std::string, uint64_t>> counters;
  bool completed = true; // false: the driver ran out of memory at event `oom_at_event`
  uint64_t oom_at_event = 0;
  std::vector<TimelinePoint> timeline;  // at most kTimelinePoints, the highest of each stretch
  Bytes reserved_after_empty_cache = 0; // once every block is freed and the cache released
};

constexpr size_t kTimelinePoints = 1000;

ModelResult replay(const History& history, const std::string& allocator,
                   const ReplayConfig& config);
nlohmann::json to_json(const ModelResult& result);

// `faultline alloc run`: every allocator of the config over one history, as one JSON document
// with the resolved config and the git revision.
nlohmann::json run_alloc(const std::string& history_path, const std::string& config_path,
                         const std::vector<std::string>& allocators, bool check_invariants);

} // namespace faultline::alloc
