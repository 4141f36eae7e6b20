#include "sim/sweep/sweep.h"

#include "policies/registry.h"
#include "sim/config/run_config.h"
#include "sim/config/schema.h"
#include "sim/core/error.h"
#include "sim/run/results.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <set>
#include <thread>
#include <unistd.h>

namespace faultline::sweep {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json policy_spec(const json& v, const std::string& file, const std::string& where) {
  if (v.is_string()) return {{"name", v}, {"params", json::object()}};
  if (!v.is_object())
    throw ConfigError(file + ": " + where + ": expected a policy name or {\"name\", \"params\"}");
  config::Reader r(v, file, where);
  json spec = {{"name", r.get<std::string>("name")}, {"params", r.raw("params", json::object())}};
  r.finish();
  return spec;
}

json base_config(config::Reader& r) {
  const json base = r.raw("base", json());
  if (base.is_string()) return config::load_json_file(base.get<std::string>());
  if (base.is_object()) return base;
  r.fail("base", "expected a run config file name or a run config object");
}

// Every combination of the varied values, in the order the keys are listed.
std::vector<json> combinations(const json& vary, const std::string& file) {
  std::vector<json> out = {json::object()};
  for (const auto& [pointer, values] : vary.items()) {
    const std::string where = "$.vary[\"" + pointer + "\"]";
    try {
      if (pointer.empty() || pointer[0] != '/') throw std::invalid_argument("no leading '/'");
      json::json_pointer{pointer};
    } catch (const std::exception& e) { // json's parse_error for a bad '~' escape
      throw ConfigError(file + ": " + where +
                        ": expected a JSON pointer like \"/driver/eviction\" (" + e.what() + ")");
    }
    if (!values.is_array() || values.empty())
      throw ConfigError(file + ": " + where + ": expected a non-empty array of values");
    std::vector<json> next;
    for (const json& partial : out)
      for (const json& value : values) {
        json c = partial;
        c[pointer] = value;
        next.push_back(c);
      }
    out = std::move(next);
  }
  return out;
}

std::vector<double> fractions(config::Reader& r) {
  const json list = r.raw("capacity_fractions", json());
  if (!list.is_array() || list.empty())
    r.fail("capacity_fractions", "expected a non-empty array of fractions in (0, 1]");
  std::vector<double> out;
  for (const json& f : list) {
    if (!f.is_number() || f.get<double>() <= 0 || f.get<double>() > 1)
      r.fail("capacity_fractions", "expected fractions in (0, 1], found " + f.dump());
    out.push_back(f.get<double>());
  }
  return out;
}

std::vector<std::string> strings(config::Reader& r, const std::string& key) {
  const json list = r.raw(key, json());
  if (!list.is_array() || list.empty()) r.fail(key, "expected a non-empty array of strings");
  std::vector<std::string> out;
  for (const json& s : list) {
    if (!s.is_string()) r.fail(key, "expected strings, found " + s.dump());
    out.push_back(s.get<std::string>());
  }
  return out;
}

// The sweep file's keys, as read; load_sweep expands them into points.
struct SweepSpec {
  std::string name, out;
  json base;
  std::vector<std::string> traces;
  std::vector<json> policies;
  std::vector<double> fractions;
  json vary = json::object();
};

void read_policies(config::Reader& r, SweepSpec& s) {
  const json list = r.raw("policies", json());
  if (!list.is_array() || list.empty())
    r.fail("policies", "expected a non-empty array of policies");
  for (size_t i = 0; i < list.size(); ++i)
    s.policies.push_back(policy_spec(list[i], r.file(), "$.policies[" + std::to_string(i) + "]"));
}

const config::Fields<SweepSpec>& sweep_fields() {
  using config::custom;
  using S = SweepSpec;
  static const config::Fields<SweepSpec> fields = {
      config::field(&S::name, "name", "the sweep's name").required(),
      config::field(&S::out, "out",
                    "output directory: OUT/points/NNNN.json per point, OUT/results.csv and "
                    "OUT/results.json for all")
          .required(),
      custom<S>({"base", "run config file name or object", "", "", "required", "",
                 "the run config every point starts from (a path relative to the working "
                 "directory); each point replaces its policy and capacity fraction"},
                [](config::Reader& r, S& s) { s.base = base_config(r); }),
      custom<S>({"traces", "array of strings", "", "", "required", "non-empty",
                 "trace files, relative to the working directory"},
                [](config::Reader& r, S& s) { s.traces = strings(r, "traces"); }),
      custom<S>({"policies", "array", "", "", "required", "non-empty",
                 "policies: a name, or {\"name\", \"params\"} as a run config's `policy`"},
                read_policies),
      custom<S>({"capacity_fractions", "array of numbers", "", "", "required",
                 "non-empty; each more than 0 and at most 1",
                 "capacities as fractions of the footprint; the base's capacity mode is kept"},
                [](config::Reader& r, S& s) { s.fractions = fractions(r); }),
      custom<S>({"vary", "object", "", "{}", "", "JSON pointer -> non-empty array of values",
                 "run config values to vary, every combination, in the order the keys are listed "
                 "(e.g. {\"/driver/eviction\": [\"fifo\", \"lru\"]})"},
                [](config::Reader& r, S& s) {
                  s.vary = r.raw("vary", json::object());
                  if (!s.vary.is_object())
                    r.fail("vary", "expected an object of JSON pointer -> values");
                }),
  };
  return fields;
}

FAULTLINE_REGISTER_SCHEMA("sweep", "a sweep file, configs/sweeps/NAME.json", sweep_fields);

json point_config(const json& base, const json& policy, double fraction, const json& varied,
                  const std::string& file) {
  json c = base;
  c.erase("description");
  c["policy"] = policy;
  const json mode = base.contains("capacity") && base["capacity"].is_object()
                        ? base["capacity"].value("mode", json("driver"))
                        : json("driver");
  c["capacity"] = {{"fraction_of_footprint", fraction}, {"mode", mode}};
  for (const auto& [pointer, value] : varied.items()) {
    try {
      c[json::json_pointer(pointer)] = value;
    } catch (const json::exception& e) { // a path through a value that is not an object
      throw ConfigError(file + ": $.vary[\"" + pointer + "\"]: cannot set " + value.dump() +
                        " there in the base config: " + e.what());
    }
  }
  return c;
}

// Checks each point before anything runs: its trace exists, its run config parses and its policy
// can be built. Each trace and each distinct config is checked once (a config is the same for
// every trace).
struct Validated {
  std::set<std::string> traces, configs;

  void check(const Point& p, const std::string& file) {
    std::error_code error; // a name past the file system's limits does not exist either
    if (traces.insert(p.trace).second && !fs::exists(p.trace, error))
      throw ConfigError(file + ": trace " + p.trace + " does not exist");
    if (!configs.insert(p.config.dump()).second) return;
    const std::string where = file + " (point " + std::to_string(p.index) + ")";
    const config::RunConfig rc = config::parse_run_config(p.config, where);
    policies::Registry::instance().create(rc.policy, rc.policy_params, where + " $.policy");
  }
};

// A grid is a product: a few lines of "vary" can ask for more points than memory holds. Refused
// before anything is expanded.
void check_grid_size(const SweepSpec& spec, const std::string& file) {
  uint64_t points = spec.traces.size() * spec.policies.size() * spec.fractions.size();
  std::string factors = std::to_string(spec.traces.size()) + " traces x " +
                        std::to_string(spec.policies.size()) + " policies x " +
                        std::to_string(spec.fractions.size()) + " capacities";
  for (const json& values : spec.vary) {
    const uint64_t n = values.is_array() ? std::max<size_t>(values.size(), 1) : 1;
    if (points <= kMaxPoints) points *= n; // so it stays far below 2^64
    factors += " x " + std::to_string(n);
  }
  if (points > kMaxPoints) {
    throw ConfigError(file + ": the grid holds more than " + std::to_string(kMaxPoints) +
                      " points (" + factors +
                      "), the most a sweep holds: split it into several sweep files");
  }
}

std::string point_file(const Sweep& s, const Point& p) {
  char name[32];
  std::snprintf(name, sizeof(name), "%04zu.json", p.index);
  return (fs::path(s.out_dir) / "points" / name).string();
}

// The point's stored result, if a previous run finished this very point.
json finished(const Sweep& s, const Point& p) {
  const std::string file = point_file(s, p);
  if (!fs::exists(file)) return json();
  json doc;
  try {
    doc = config::load_json_file(file);
  } catch (const ConfigError&) {
    return json(); // not a finished point (the run rewrites it)
  }
  if (!doc.is_object() || !doc.contains("point") || doc["point"] != p.describe()) return json();
  // A point computed by another build is stale: the model may have changed.
  if (doc["result"]["faultline"]["git_revision"] != git_revision()) return json();
  return doc;
}

void write_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp) << text;
  fs::rename(tmp, path);
}

class Progress {
public:
  Progress(size_t total, bool enabled) : total_(total), enabled_(enabled) {}
  void done(size_t n) {
    if (!enabled_) return;
    std::lock_guard<std::mutex> lock(mutex_);
    constexpr int kWidth = 40;
    const int filled = static_cast<int>(kWidth * n / std::max<size_t>(1, total_));
    std::cerr << "\rsweep [" << std::string(filled, '#') << std::string(kWidth - filled, '.')
              << "] " << n << "/" << total_ << " points" << (n == total_ ? "\n" : "") << std::flush;
  }

private:
  size_t total_;
  bool enabled_;
  std::mutex mutex_;
};

struct Runner {
  const Sweep& sweep;
  std::vector<json>& results;
  std::vector<size_t> todo;
  std::atomic<size_t> next{0}, finished_count{0};
  std::mutex error_mutex;
  std::string error;
  Progress& progress;

  void work() {
    for (size_t i; (i = next++) < todo.size();) {
      {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error.empty()) return;
      }
      const Point& p = sweep.points[todo[i]];
      try {
        SimRequest request;
        request.config_path = "sweep " + sweep.name + " point " + std::to_string(p.index);
        request.config_doc = p.config;
        request.trace_path = p.trace;
        json doc = {{"point", p.describe()}, {"result", run_sim(request)}};
        write_atomically(point_file(sweep, p), doc.dump(2) + "\n");
        results[p.index] = std::move(doc);
        progress.done(++finished_count);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (error.empty())
          error = "point " + std::to_string(p.index) + " (" + p.trace + ", " +
                  p.policy["name"].get<std::string>() + "): " + e.what();
      }
    }
  }
};

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

const std::vector<std::string> kResultColumns = {
    "total_time_ns", "compute_ns", "fault_stall_ns",    "faults",
    "batches",       "evictions",  "bytes_host_to_gpu", "bytes_gpu_to_host"};

// One row per point in grid order; the same points always give the same bytes.
void write_tables(const Sweep& s, const std::vector<json>& results) {
  json rows = json::array();
  std::string csv = "index,trace,policy,policy_params,capacity_fraction,varied,capacity_bytes";
  for (const auto& c : kResultColumns) csv += "," + c;
  csv += ",prefetch_issued_bytes,prefetch_used_bytes,git_revision\n";
  for (const Point& p : s.points) {
    const json& doc = results[p.index];
    const json& r = doc["result"]["results"];
    rows.push_back({{"point", doc["point"]},
                    {"config", doc["result"]["config"]},
                    {"results", r},
                    {"git_revision", doc["result"]["faultline"]["git_revision"]}});
    if (doc["result"].contains("neighbour_jobs"))
      rows.back()["neighbour_jobs"] = doc["result"]["neighbour_jobs"];
    std::vector<std::string> fields = {
        std::to_string(p.index),
        csv_field(p.trace),
        csv_field(p.policy["name"].get<std::string>()),
        csv_field(p.policy["params"].dump()),
        json(p.capacity_fraction).dump(),
        csv_field(p.varied.dump()),
        doc["result"]["config"]["capacity"]["resolved_bytes"].dump()};
    for (const auto& c : kResultColumns) fields.push_back(r[c].dump());
    fields.push_back(r["prefetch"]["issued_bytes"].dump());
    fields.push_back(r["prefetch"]["used_bytes"].dump());
    fields.push_back(doc["result"]["faultline"]["git_revision"].get<std::string>());
    for (size_t i = 0; i < fields.size(); ++i) csv.append(i ? "," : "").append(fields[i]);
    csv.push_back('\n');
  }
  write_atomically((fs::path(s.out_dir) / "results.csv").string(), csv);
  write_atomically((fs::path(s.out_dir) / "results.json").string(),
                   json({{"sweep", s.name}, {"points", rows}}).dump(2) + "\n");
}

} // namespace

json Point::describe() const {
  return {{"index", index},   {"trace", trace},
          {"policy", policy}, {"capacity_fraction", capacity_fraction},
          {"varied", varied}, {"config", config}};
}

Sweep load_sweep(const std::string& path) {
  const json doc = config::load_json_file(path);
  config::Reader r(doc, path);
  SweepSpec spec;
  config::read_fields(r, spec, sweep_fields());
  r.finish();
  check_grid_size(spec, path);
  Sweep s;
  s.name = spec.name;
  s.out_dir = spec.out;
  const std::vector<json> combos = combinations(spec.vary, path);
  Validated validated;
  for (const std::string& trace : spec.traces)
    for (const json& policy : spec.policies)
      for (double fraction : spec.fractions)
        for (const json& varied : combos) {
          Point p{s.points.size(), trace,  policy,
                  fraction,        varied, point_config(spec.base, policy, fraction, varied, path)};
          validated.check(p, path);
          s.points.push_back(std::move(p));
        }
  return s;
}

Outcome run_sweep(const Sweep& s, const RunOptions& options) {
  fs::create_directories(fs::path(s.out_dir) / "points");
  std::vector<json> results(s.points.size());
  Outcome outcome;
  std::vector<size_t> todo;
  for (const Point& p : s.points) {
    if (!options.shard.holds(p)) continue;
    results[p.index] = finished(s, p);
    if (results[p.index].is_null())
      todo.push_back(p.index);
    else
      ++outcome.reused;
  }
  Progress progress(todo.size(), options.progress);
  Runner runner{s, results, todo, {0}, {0}, {}, {}, progress};
  const unsigned wanted =
      options.jobs ? options.jobs : std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < std::min<size_t>(wanted, todo.size()); ++t)
    threads.emplace_back([&runner] { runner.work(); });
  for (auto& t : threads) t.join();
  if (!runner.error.empty())
    throw SimulationError("sweep " + s.name + ": " + runner.error +
                          " (finished points are kept in " + s.out_dir +
                          "/points; rerun to resume)");
  outcome.ran = todo.size();
  if (options.shard.count > 1) return outcome; // another shard may still run: merge_sweep
  write_tables(s, results);
  outcome.tables = true;
  return outcome;
}

Outcome merge_sweep(const Sweep& s) {
  std::vector<json> results(s.points.size());
  std::string missing;
  size_t count = 0;
  for (const Point& p : s.points) {
    results[p.index] = finished(s, p);
    if (!results[p.index].is_null()) continue;
    if (++count <= 20) missing += (missing.empty() ? "" : ", ") + std::to_string(p.index);
  }
  if (count > 0)
    throw ConfigError("sweep " + s.name + ": cannot merge: " + std::to_string(count) + " of " +
                      std::to_string(s.points.size()) + " points missing from " + s.out_dir +
                      "/points or computed by another build (" + missing +
                      (count > 20 ? ", ..." : "") +
                      "); run their shards (--shard I/N runs the points whose index modulo N is "
                      "I) with this build");
  write_tables(s, results);
  return {0, s.points.size(), true};
}

} // namespace faultline::sweep
