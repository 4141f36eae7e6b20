// Measurements documents derived from others without a GPU: the per-machine calibration a full
// one implies (or a per-machine one with another fault path kept), a full calibration with
// other instances' fault benchmarks pooled in, and one instance's calibrations of several moments
// combined (sim/live/calibrate.h).
#include "sim/core/error.h"
#include "sim/live/calibrate.h"
#include "sim/live/calibrate_faults.h"
#include "sim/live/calibrate_grid.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace faultline::live {

using nlohmann::json;

json per_machine_measurements(const json& full, const std::string& from, bool keep_fault_path) {
  if (full.is_object() && full.contains("fault_path_from")) { // per machine already
    json out = full;
    out["fault_path_from"] = fault_path_of(from);
    out["fault_path_replaced"] = full["fault_path_from"];
    if (keep_fault_path) out.erase("fault_path_fitted");
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
  if (!keep_fault_path) out["fault_path_fitted"] = true;
  out["derived_from_full_calibration"] = true;
  out.erase("peer");
  out.erase("peer_uvm");
  out["faults"] = json::array();
  // Full calibrations before the strided benchmarks have none: their per-machine calibration
  // goes without, and says so.
  const bool strided = std::any_of(full["faults"].begin(), full["faults"].end(), [](const json& f) {
    return f.is_object() && f.value("order", json("block")) == "strided";
  });
  if (!strided) out["fault_points_not_measured"] = "strided (the full calibration has none)";
  for (const char* kind : {"populate", "migrate"})
    for (const char* order : {"block", "strided"})
      for (const auto& point : order == std::string("block") ? g.fault_points
                               : strided                     ? g.strided_points
                                                             : Grid{}.strided_points) {
        const uint64_t blocks = point.first, k = point.second; // clang 14: no structured binding
        const auto it =
            std::find_if(full["faults"].begin(), full["faults"].end(), [&](const json& f) {
              return f.is_object() && f.value("kind", json()) == kind &&
                     f.value("blocks", json()) == blocks &&
                     f.value("pages_per_block", json()) == k &&
                     f.value("order", json("block")) == order;
            });
        if (it == full["faults"].end())
          throw Error("calibration measurements: $.faults: no " + std::string(kind) + " " + order +
                      " point of " + std::to_string(blocks) + " blocks x " + std::to_string(k) +
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

namespace {

// Numbers and strings that name a benchmark rather than time it: calibrations combined must
// agree on them. In a list of [size, ns] pairs (host_to_gpu, calls_per_kernel) the first is one.
bool names_the_benchmark(const std::string& key) {
  static const std::set<std::string> keys = {
      "blocks", "pages_per_block", "chunks",  "pairs", "pages", "bytes",
      "runs",   "prefetches",      "repeats", "size"};
  return keys.count(key) > 0;
}

bool is_pair(const json& v) {
  return v.is_array() && v.size() == 2 && v[0].is_number() && v[1].is_number();
}

using Calibrations = std::vector<std::pair<std::string, json>>;

// Walks the calibrations' measurements together: times become their median, all else must agree.
class Combiner {
public:
  explicit Combiner(const Calibrations& c) : c_(c) {}

  json combine(const std::vector<const json*>& values, const std::string& path,
               const std::string& key) const {
    const json& first = *values[0];
    for (size_t i = 1; i < values.size(); ++i)
      if (values[i]->type() != first.type() && !(values[i]->is_number() && first.is_number()))
        differ(i, path, std::string("a ") + values[i]->type_name(),
               std::string("a ") + first.type_name());
    if (first.is_object()) return object(values, path);
    if (first.is_array() && key == "samples_ns") return pooled(values);
    if (first.is_array()) return array(values, path, key);
    // The kept fault path holds a profile's values, not times: like strings, they must agree.
    if (first.is_number() && !names_the_benchmark(key) && path.rfind("$.fault_path_from", 0) != 0)
      return median(values);
    for (size_t i = 1; i < values.size(); ++i)
      if (*values[i] != first) differ(i, path, values[i]->dump(), first.dump());
    return first;
  }

private:
  json object(const std::vector<const json*>& values, const std::string& path) const {
    const json& first = *values[0];
    for (size_t i = 1; i < values.size(); ++i)
      for (const auto& item : values[i]->items())
        if (!first.contains(item.key())) differ(i, path + "." + item.key(), "a value", "none");
    json out = json::object();
    for (const auto& item : first.items()) {
      std::vector<const json*> below;
      for (size_t i = 0; i < values.size(); ++i) {
        if (!values[i]->contains(item.key())) differ(i, path + "." + item.key(), "none", "a value");
        below.push_back(&values[i]->at(item.key()));
      }
      out[item.key()] = combine(below, path + "." + item.key(), item.key());
    }
    return out;
  }

  json array(const std::vector<const json*>& values, const std::string& path,
             const std::string& key) const {
    const json& first = *values[0];
    for (size_t i = 1; i < values.size(); ++i)
      if (values[i]->size() != first.size())
        differ(i, path, std::to_string(values[i]->size()) + " elements",
               std::to_string(first.size()));
    const bool pair = is_pair(first);
    json out = json::array();
    for (size_t e = 0; e < first.size(); ++e) {
      std::vector<const json*> below;
      for (const json* v : values) below.push_back(&v->at(e));
      out.push_back(
          combine(below, path + "[" + std::to_string(e) + "]", pair && e == 0 ? "size" : key));
    }
    return out;
  }

  // Samples spread through each calibration: every moment's, side by side, for the fit's spread.
  static json pooled(const std::vector<const json*>& values) {
    json out = json::array();
    for (const json* v : values)
      for (const json& x : *v) out.push_back(x);
    return out;
  }

  static json median(const std::vector<const json*>& values) {
    std::vector<double> v;
    bool whole = true;
    for (const json* x : values) {
      v.push_back(x->get<double>());
      whole &= x->is_number_integer();
    }
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    const double m = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    if (whole) return static_cast<int64_t>(std::llround(m));
    return m;
  }

  [[noreturn]] void differ(size_t i, const std::string& path, const std::string& has,
                           const std::string& first_has) const {
    throw Error(c_[i].first + ": " + path + ": " + has + " where " + c_[0].first + " has " +
                first_has + ": combine calibrations of one instance made the same way");
  }

  const Calibrations& c_;
};

} // namespace

json combined_measurements(const Calibrations& calibrations, CombineBy by) {
  if (calibrations.size() < 2)
    throw Error("calibration measurements: combining needs at least two calibrations");
  std::vector<const json*> values;
  json from = json::array();
  for (const auto& [path, doc] : calibrations) {
    const json* m =
        doc.is_object() && doc.contains("measurements") ? &doc["measurements"] : nullptr;
    if (!m || !m->is_object())
      throw Error(path + ": expected a calibration document with $.measurements");
    if (m->contains("combined_from"))
      throw Error(path + ": combined already: combine the calibrations it was made from");
    values.push_back(m);
    from.push_back({{"path", path},
                    {"name", doc.value("name", json())},
                    {"measured_by", doc.value("measured_by", json())}});
  }
  json out = Combiner(calibrations).combine(values, "$", ""); // also checks that they agree
  if (by == CombineBy::kFastest) {
    size_t kept = 0;
    int64_t least = 0;
    for (size_t i = 0; i < values.size(); ++i) {
      const json& faults = values[i]->value("faults", json());
      if (!faults.is_array() || faults.empty())
        throw Error(calibrations[i].first +
                    ": $.faults: expected the fault benchmarks, to find the fastest moment");
      int64_t total = 0;
      for (size_t f = 0; f < faults.size(); ++f) {
        const json& ns = faults[f].value("ns", json());
        if (!ns.is_number())
          throw Error(calibrations[i].first + ": $.faults[" + std::to_string(f) +
                      "].ns: expected a time in ns");
        total += ns.get<int64_t>();
      }
      from[i]["faults_ns"] = total;
      if (i == 0 || total < least) {
        least = total;
        kept = i;
      }
    }
    from[kept]["kept"] = true;
    out = *values[kept];
  }
  out["combined_by"] = by == CombineBy::kFastest ? "fastest" : "median";
  out["combined_from"] = from;
  return out;
}

} // namespace faultline::live
