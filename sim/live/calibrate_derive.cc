// Measurements documents derived from others without a GPU: the per-machine calibration a full
// one implies (or a per-machine one with another fault path kept), and a full calibration with
// other instances' fault benchmarks pooled in (sim/live/calibrate.h).
#include "sim/core/error.h"
#include "sim/live/calibrate.h"
#include "sim/live/calibrate_faults.h"
#include "sim/live/calibrate_grid.h"

#include <algorithm>

namespace faultline::live {

using nlohmann::json;

json per_machine_measurements(const json& full, const std::string& from) {
  if (full.is_object() && full.contains("fault_path_from")) { // per machine already
    json out = full;
    out["fault_path_from"] = fault_path_of(from);
    out["fault_path_replaced"] = full["fault_path_from"];
    return out;
  }
  if (!full.is_object() || !full.contains("faults") || !full["faults"].is_array())
    throw Error("calibration measurements: expected a calibration's (with $.faults, or a "
                "per-machine one's $.fault_path_from) to derive a per-machine calibration from");
  CalibrationSettings settings;
  settings.from = from;
  const Grid g = grid(settings);
  json out = full;
  out["fault_path_from"] = fault_path_of(from);
  out["derived_from_full_calibration"] = true;
  out.erase("peer");
  out.erase("peer_uvm");
  out["faults"] = json::array();
  for (const char* kind : {"populate", "migrate"})
    for (const auto& point : g.fault_points) { // no structured binding: clang 14's lambdas
      const uint64_t blocks = point.first, k = point.second;
      const auto it =
          std::find_if(full["faults"].begin(), full["faults"].end(), [&](const json& f) {
            return f.is_object() && f.value("kind", json()) == kind &&
                   f.value("blocks", json()) == blocks && f.value("pages_per_block", json()) == k &&
                   f.value("order", json("block")) == "block";
          });
      if (it == full["faults"].end())
        throw Error("calibration measurements: $.faults: no " + std::string(kind) + " point of " +
                    std::to_string(blocks) + " blocks x " + std::to_string(k) +
                    " pages, which a per-machine calibration measures");
      out["faults"].push_back(*it);
    }
  for (const char* direction : {"host_to_gpu", "gpu_to_host"}) {
    if (!full.contains(direction) || !full[direction].is_array() || full[direction].empty())
      throw Error(std::string("calibration measurements: $.") + direction +
                  ": expected a non-empty array of [bytes, ns]");
    out[direction] = json::array({full[direction].back()}); // the fit takes the largest
  }
  return out;
}

json pooled_measurements(const json& measurements,
                         const std::vector<std::pair<std::string, json>>& others) {
  const auto full = [](const json& m, const std::string& what) {
    if (!m.is_object() || m.contains("fault_path_from") || !m.contains("faults") ||
        !m["faults"].is_array())
      throw Error(what + ": expected a full calibration's measurements (with $.faults and "
                         "without $.fault_path_from) to pool fault benchmarks");
  };
  full(measurements, "the calibration refitted");
  json out = measurements;
  json& pooled = out["pooled_from"]; // kept from an earlier pooling, if any
  if (!pooled.is_array()) pooled = json::array();
  for (const auto& [path, doc] : others) {
    const json& m = doc.value("measurements", json());
    full(m, path);
    if (m.value("device", json()) != measurements.value("device", json()))
      throw Error(path + ": measured on " + m.value("device", json()).dump() + ", not on " +
                  measurements.value("device", json()).dump() +
                  ": pool the fault benchmarks of one GPU model");
    const std::string name = doc.value("name", path);
    for (json point : m["faults"]) {
      point["instance"] = name;
      out["faults"].push_back(point);
    }
    pooled.push_back({{"name", name},
                      {"measured_by", doc.value("measured_by", json())},
                      {"device", m["device"]},
                      {"points", m["faults"].size()}});
  }
  return out;
}

} // namespace faultline::live
