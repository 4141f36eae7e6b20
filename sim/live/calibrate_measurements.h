// Reading a calibration's measurements document (sim/live/calibrate.h): every complaint names
// the JSON path of the value. Internal to the calibrate layer (calibrate_*.cc).
#pragma once

#include "sim/core/error.h"
#include "sim/core/types.h"

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace faultline::live {

// Reads measurement values with the JSON path in every complaint.
class Measurements {
public:
  explicit Measurements(const nlohmann::json& doc) : doc_(doc) {}

  const nlohmann::json& at(const std::string& key) const { return at(doc_, key, "$"); }
  const nlohmann::json& root() const { return doc_; }
  bool has(const std::string& key) const { return doc_.contains(key); }
  Time ns(const nlohmann::json& parent, const std::string& key, const std::string& path) const {
    return ns_value(at(parent, key, path), path + "." + key);
  }
  // The element `index` of an array of nanoseconds.
  Time ns(const nlohmann::json& array, size_t index, const std::string& path) const {
    return ns_value(array.at(index), path + "[" + std::to_string(index) + "]");
  }
  // A positive integer count no larger than `max`.
  uint64_t count(const nlohmann::json& parent, const std::string& key, const std::string& path,
                 uint64_t max) const {
    const nlohmann::json& v = at(parent, key, path);
    if (!v.is_number_integer() || v.get<int64_t>() <= 0 || v.get<uint64_t>() > max)
      throw Error("calibration measurements: " + path + "." + key +
                  ": expected a whole number from 1 to " + std::to_string(max));
    return v.get<uint64_t>();
  }
  // [[x, ns], ...], ascending x (bytes, or the `unit` given).
  std::vector<std::pair<Bytes, Time>> series(const nlohmann::json& parent, const std::string& key,
                                             const std::string& path,
                                             const std::string& unit = "bytes") const {
    const nlohmann::json& v = at(parent, key, path);
    std::vector<std::pair<Bytes, Time>> out;
    for (size_t i = 0; v.is_array() && i < v.size(); ++i) {
      const nlohmann::json& p = v[i];
      if (!p.is_array() || p.size() != 2 || !p[0].is_number_integer() || !p[1].is_number() ||
          p[0].get<int64_t>() <= 0 || p[1].get<double>() <= 0 ||
          (!out.empty() && p[0].get<Bytes>() <= out.back().first))
        throw Error("calibration measurements: " + path + "." + key + "[" + std::to_string(i) +
                    "]: expected [" + unit + ", ns] with " + unit + " ascending");
      out.emplace_back(p[0].get<Bytes>(), p[1].get<Time>());
    }
    if (out.empty())
      throw Error("calibration measurements: " + path + "." + key +
                  ": expected a non-empty array of [" + unit + ", ns]");
    return out;
  }

private:
  static Time ns_value(const nlohmann::json& v, const std::string& path) {
    if (!v.is_number() || v.get<double>() < 0)
      throw Error("calibration measurements: " + path +
                  ": expected a non-negative number of nanoseconds");
    return v.get<Time>();
  }
  static const nlohmann::json& at(const nlohmann::json& parent, const std::string& key,
                                  const std::string& path) {
    if (!parent.is_object() || !parent.contains(key))
      throw Error("calibration measurements: " + path + ": missing \"" + key + "\"");
    return parent.at(key);
  }
  const nlohmann::json& doc_;
};
} // namespace faultline::live
