// The work behind `faultline replay` and `faultline calibrate` (sim/cli/replay.cc and
// sim/cli/calibrate.cc read their options).
#include "sim/live/command.h"

#include "sim/config/reader.h"
#include "sim/config/run_config.h"
#include "sim/core/error.h"
#include "sim/live/calibrate.h"
#include "sim/live/replay.h"
#include "sim/run/results.h"

#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

namespace faultline::live {

namespace fs = std::filesystem;

// One GPU, one job: a config that simulates more has no live counterpart here (the two-GPU
// harvest runs take --peer-budget).
void apply_run_config(const std::string& path, ReplayRequest& request) {
  const config::RunConfig c = config::load_run_config(path);
  if (c.gpus > 1 || !c.neighbours.empty())
    throw UsageError(path + ": the live replay runs one trace on one GPU; this config simulates " +
                     std::to_string(c.gpus) + " GPUs and " + std::to_string(c.neighbours.size()) +
                     " neighbour jobs");
  request.policy = c.policy;
  request.policy_params = c.policy_params;
  request.budget_bytes = c.capacity.bytes;
  if (c.capacity.fraction > 0) request.budget_fraction = c.capacity.fraction;
  request.iterations = c.iterations;
  if (c.capacity_mode != config::RunConfig::CapacityMode::kBudget)
    std::cerr << "faultline replay: " << path << ": capacity.mode \""
              << (c.capacity_mode == config::RunConfig::CapacityMode::kDriver ? "driver"
                                                                              : "program")
              << "\" is not the replay's; the replay keeps a residency budget (the simulator's "
              << "\"budget\" mode)\n";
}

std::unique_ptr<LiveDevice> open_device(int device, const OpenOptions& options) {
  std::string path = std::getenv("FAULTLINE_LIVE") ? std::getenv("FAULTLINE_LIVE") : "";
  if (path.empty())
    path = (fs::read_symlink("/proc/self/exe").parent_path() / "libfaultline_live.so").string();
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library)
    throw Error("cannot load the live backend " + path + " (" + dlerror() +
                "); it is built only where the CUDA toolkit is found");
  auto open = reinterpret_cast<OpenFunction>(dlsym(library, kOpenSymbol));
  if (!open) throw Error(path + " has no " + kOpenSymbol);
  char message[512] = {};
  LiveDevice* d = open(device, &options, message, sizeof(message));
  if (!d) throw Error("GPU " + std::to_string(device) + " unavailable: " + message);
  return std::unique_ptr<LiveDevice>(d);
}

namespace {

void write_json(const fs::path& path, const nlohmann::json& doc) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path);
  if (!out || !(out << doc.dump(2) << "\n")) throw Error(path.string() + ": cannot write");
  std::cout << "wrote " << path.string() << "\n";
}

// A calibration document written earlier.
nlohmann::json load_calibration(const std::string& path) {
  if (!fs::exists(path)) throw Error(path + ": no such calibration file");
  nlohmann::json doc = config::load_json_file(path); // a syntax error names line, column
  if (!doc.is_object() || !doc.contains("measurements") || !doc.contains("measured_by"))
    throw Error(path + ": expected a calibration document with \"measurements\" and "
                       "\"measured_by\" (written by faultline calibrate)");
  return doc;
}

} // namespace

void run_calibrate(CalibrateRequest& c, const std::string& command_line) {
  nlohmann::json doc;
  if (c.refit.empty()) {
    auto device = open_device(c.device, {.counters = c.settings.cupti_counters});
    if (c.moments <= 1) {
      doc["measurements"] = measure(*device, c.settings);
    } else {
      std::vector<std::pair<std::string, nlohmann::json>> moments;
      for (uint32_t i = 1; i <= c.moments; ++i)
        moments.emplace_back("moment " + std::to_string(i),
                             nlohmann::json{{"measurements", measure(*device, c.settings)}});
      doc["measurements"] = combined_measurements(moments, CombineBy::kFastest);
      for (const nlohmann::json& m : doc["measurements"]["combined_from"])
        std::cout << m["path"].get<std::string>() << ": fault benchmarks "
                  << m["faults_ns"].get<int64_t>() / 1000000 << " ms"
                  << (m.value("kept", false) ? " (kept: the fastest)" : "") << "\n";
    }
    doc["measured_by"] = command_line;
  } else {
    const nlohmann::json old = load_calibration(c.refit);
    // The refitted document's name and base stand unless given again.
    if (!c.named) c.settings.name = old.value("name", c.settings.name);
    if (!c.based) c.settings.base = old.value("base", c.settings.base);
    nlohmann::json measurements = old["measurements"];
    if (!c.combine.empty()) {
      std::vector<std::pair<std::string, nlohmann::json>> moments = {{c.refit, old}};
      for (const std::string& path : c.combine) moments.emplace_back(path, load_calibration(path));
      measurements = combined_measurements(moments, c.combine_by);
    }
    if (!c.pool.empty()) {
      std::vector<std::pair<std::string, nlohmann::json>> others;
      for (const std::string& path : c.pool) others.emplace_back(path, load_calibration(path));
      measurements = pooled_measurements(measurements, others);
    }
    doc["measurements"] =
        c.settings.from.empty()
            ? measurements
            : per_machine_measurements(measurements, c.settings.from, c.settings.keep_fault_path);
    // After combining and deriving, so that the price given is the one fitted.
    if (c.eviction_ns > 0) doc["measurements"]["eviction"]["priced_at_ns"] = c.eviction_ns;
    doc["measured_by"] = old["measured_by"];
    doc["refit_by"] = command_line;
  }
  doc["name"] = c.settings.name;
  doc["base"] = c.settings.base;
  const FittedProfile fitted = fit(doc["measurements"], c.settings);
  doc["fit"] = fitted.report;
  doc["fit_revision"] = git_revision();
  const fs::path dir = c.out_dir;
  write_json(dir / "calibration" / (c.settings.name + ".json"), doc);
  write_json(dir / "gpus" / (c.settings.name + ".json"), fitted.gpu);
  write_json(dir / "links" / (c.settings.name + "-host.json"), fitted.host_link);
  if (!fitted.peer_link.is_null())
    write_json(dir / "links" / (c.settings.name + "-peer.json"), fitted.peer_link);
  std::cout << "fault benchmarks: median |error| " << fitted.report["median_abs_error"] << ", max "
            << fitted.report["max_abs_error"] << "\n";
  const nlohmann::json& m = doc["measurements"];
  if (m.contains("fault_path_from")) {
    const std::string from = fitted.report.value("fault_path_from", std::string("?"));
    if (fitted.report.contains("kept"))
      std::cout << "  (with " << from << "'s fault path kept: median |error| "
                << fitted.report["kept"]["median_abs_error"] << ", max "
                << fitted.report["kept"]["max_abs_error"] << ")\n";
    std::cout << "kept from " << c.settings.base << ", not measured by a per-machine calibration: "
              << (fitted.report.contains("kept") ? "" : "the fault path, ")
              << "the memory size, the peer link\n";
  }
}

nlohmann::json replay_on_gpu(const ReplayRequest& request, int device) {
  if (!fs::exists(request.trace_path)) throw Error(request.trace_path + ": no such trace");
  // FAULTLINE_LIVE_FAULT_RECORDS=0 leaves out the page-fault records (diagnosis, issue 21).
  const char* records = std::getenv("FAULTLINE_LIVE_FAULT_RECORDS");
  auto gpu = open_device(device, {.counters = request.counters,
                                  .fault_records = !(records && std::string(records) == "0")});
  return run_replay(request, *gpu);
}

} // namespace faultline::live
