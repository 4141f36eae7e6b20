#include "sim/live/command.h"

#include "sim/config/reader.h"
#include "sim/config/run_config.h"
#include "sim/core/error.h"
#include "sim/core/values.h"
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
namespace {

namespace fs = std::filesystem;

const char* kUsage =
    "usage: faultline replay --trace T [--config C] [--policy P] [--params JSON] [--budget B]\n"
    "                        [--margin BYTES] [--faults books|cupti [--drain-every N]]\n"
    "                        [--per-kernel] [--device N] [--iterations N]\n"
    "                        [--peer-budget BYTES] [--peer-reserve BYTES] [--out results.json]\n"
    "Re-executes trace T on a real GPU under policy P (default ondemand; --params is its\n"
    "policy.params object) with a residency budget B: a fraction of the footprint (0.5 or 50%)\n"
    "or bytes (8G). Writes the same result fields as 'faultline sim', measured. Refuses when\n"
    "the trace's memory would come within --margin (default 2G) of the GPU's free memory.\n"
    "--peer-budget gives the policy the next GPU's spare memory as a victim cache (harvest\n"
    "evicts there with cudaMemPrefetchAsync to that GPU; faults fetch back over NVLink); it\n"
    "keeps --peer-reserve (default 100M) free, as the simulator's driver.peer_reserve_bytes.\n"
    "A policy that watches faults (deepum, oracle) gets each kernel's faults at its end: the\n"
    "pages it found off the GPU, from the replay's books (--faults books, the default), or\n"
    "CUPTI's fault records, drained after every --drain-every N kernels (--faults cupti;\n"
    "CUPTI loses most of them, and each drain slows the next kernel).\n"
    "--config C takes the policy, its params, the capacity (as the budget) and the iterations\n"
    "from the run config 'faultline sim' takes, so one file drives both; options given here\n"
    "override it (--policy drops the config's params). The replay always keeps a residency\n"
    "budget, the simulator's capacity mode\n"
    "\"budget\"; the config's GPU profile and driver settings describe the simulated machine\n"
    "and are not used.\n"
    "--iterations N runs N training steps, as 'faultline sim --iterations': the trace's first\n"
    "N, or all of them and then its last step again; the result has a row per step.\n"
    "Needs libfaultline_live.so (built where the CUDA toolkit is) beside the binary or in\n"
    "$FAULTLINE_LIVE.\n";

void parse_budget(const std::string& text, ReplayJob& job) {
  job.budget_bytes = 0; // a budget given here replaces the run config's, bytes or fraction
  if (!text.empty() && text.back() == '%') {
    job.budget_fraction = std::atof(text.c_str()) / 100.0;
  } else if (text.find_first_of("KMG") != std::string::npos) {
    job.budget_bytes = parse_number(text, "--budget");
    return;
  } else {
    job.budget_fraction = std::atof(text.c_str());
  }
  if (!(job.budget_fraction > 0 && job.budget_fraction <= 1))
    throw UsageError("--budget " + text + ": expected a fraction in (0, 1], a percentage or bytes");
}

struct Parsed {
  ReplayJob job;
  std::string out;
  int device = 0;
};

void parse_fault_source(const std::string& text, ReplayJob& job) {
  if (text == "books")
    job.fault_source = ReplayJob::FaultSource::kBooks;
  else if (text == "cupti")
    job.fault_source = ReplayJob::FaultSource::kCupti;
  else
    throw UsageError("--faults " + text + ": expected books or cupti");
}

// The run config's part that has a live counterpart. One GPU, one job: a config that simulates
// more has no live counterpart here (the two-GPU harvest runs take --peer-budget).
void apply_run_config(const std::string& path, ReplayJob& job) {
  const config::RunConfig c = config::load_run_config(path);
  if (c.gpus > 1 || !c.neighbours.empty())
    throw UsageError(path + ": the live replay runs one trace on one GPU; this config simulates " +
                     std::to_string(c.gpus) + " GPUs and " + std::to_string(c.neighbours.size()) +
                     " neighbour jobs");
  job.policy = c.policy;
  job.policy_params = c.policy_params;
  job.budget_bytes = c.capacity.bytes;
  if (c.capacity.fraction > 0) job.budget_fraction = c.capacity.fraction;
  job.iterations = c.iterations;
  if (c.capacity_mode == config::RunConfig::CapacityMode::kDriver)
    std::cerr << "faultline replay: " << path << ": capacity.mode \"driver\" has no live "
              << "counterpart; the replay keeps a residency budget (the simulator's \"budget\" "
              << "mode)\n";
}

Parsed parse(int argc, char** argv) {
  Parsed p;
  std::string drain_every;
  for (int i = 2; i + 1 < argc; ++i) // the config first, so that every option overrides it
    if (std::string(argv[i]) == "--config") apply_run_config(argv[i + 1], p.job);
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(a + " needs a value");
      return argv[++i];
    };
    if (a == "--trace")
      p.job.trace_path = value();
    else if (a == "--config")
      value(); // applied above
    else if (a == "--policy") {
      p.job.policy = value();
      p.job.policy_params = nlohmann::json::object(); // the config's params were another's
    } else if (a == "--params") {
      const std::string text = value();
      p.job.policy_params = nlohmann::json::parse(text, nullptr, false);
      if (!p.job.policy_params.is_object())
        throw UsageError("--params " + text + ": expected a JSON object");
    } else if (a == "--budget")
      parse_budget(value(), p.job);
    else if (a == "--margin")
      p.job.margin = parse_number(value(), "--margin");
    else if (a == "--peer-budget")
      p.job.peer_budget_bytes = parse_number(value(), "--peer-budget");
    else if (a == "--peer-reserve")
      p.job.peer_reserve_bytes = parse_number(value(), "--peer-reserve");
    else if (a == "--faults")
      parse_fault_source(value(), p.job);
    else if (a == "--drain-every")
      drain_every = value();
    else if (a == "--device")
      p.device = std::atoi(value().c_str());
    else if (a == "--out")
      p.out = value();
    else if (a == "--per-kernel")
      p.job.per_kernel = true;
    else if (a == "--iterations")
      p.job.iterations = parse_iterations(value());
    else
      throw UsageError("replay: unknown option " + a);
  }
  if (p.job.trace_path.empty()) throw UsageError("replay: --trace is required");
  if (!drain_every.empty()) {
    if (p.job.fault_source != ReplayJob::FaultSource::kCupti)
      throw UsageError("replay: --drain-every applies only with --faults cupti");
    p.job.drain_every = static_cast<uint32_t>(parse_number(drain_every, "--drain-every"));
    if (p.job.drain_every == 0)
      throw UsageError("--drain-every " + drain_every + ": expected 1 or more");
  }
  return p;
}

std::unique_ptr<LiveDevice> open_device(int device) {
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
  LiveDevice* d = open(device, message, sizeof(message));
  if (!d) throw Error("GPU " + std::to_string(device) + " unavailable: " + message);
  return std::unique_ptr<LiveDevice>(d);
}

const char* kCalibrateUsage =
    "usage: faultline calibrate --name NAME [--base PROFILE] [--repeats N] [--margin BYTES]\n"
    "                           [--device N] [--quick] [--out-dir DIR]\n"
    "       faultline calibrate --refit MEASUREMENTS.json [--name NAME] [--base PROFILE]\n"
    "                           [--out-dir DIR]\n"
    "Runs microbenchmarks on the GPU (fault batches against blocks and pages per block, first\n"
    "touch and host-to-GPU faults, prefetch bandwidth each way against size, eviction, CPU\n"
    "faults, peer copies where there is a second GPU; each the median of --repeats runs,\n"
    "default 5), fits a GPU profile to them and writes\n"
    "DIR/calibration/NAME.json (measurements, command, fit report), DIR/gpus/NAME.json and\n"
    "DIR/links/NAME-host.json (and NAME-peer.json). DIR defaults to configs. The memory size\n"
    "(and the peer link without a second GPU) come from --base (default h200). --refit fits\n"
    "committed measurements again without a GPU, with their name and base unless given.\n";

struct CalibrateArgs {
  CalibrationJob job;
  std::string refit, out_dir = "configs";
  int device = 0;
  bool named = false, based = false;
};

CalibrateArgs parse_calibrate(int argc, char** argv) {
  CalibrateArgs c;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(a + " needs a value");
      return argv[++i];
    };
    if (a == "--name")
      c.job.name = value(), c.named = true;
    else if (a == "--base")
      c.job.base = value(), c.based = true;
    else if (a == "--repeats")
      c.job.repeats = static_cast<uint32_t>(std::max<uint64_t>(1, parse_number(value(), a)));
    else if (a == "--margin")
      c.job.margin = parse_number(value(), a);
    else if (a == "--device")
      c.device = static_cast<int>(parse_number(value(), a));
    else if (a == "--quick")
      c.job.quick = true;
    else if (a == "--out-dir")
      c.out_dir = value();
    else if (a == "--refit")
      c.refit = value();
    else
      throw UsageError("calibrate: unknown option " + a);
  }
  if (!c.named && c.refit.empty()) throw UsageError("calibrate: --name is required");
  return c;
}

void write_json(const fs::path& path, const nlohmann::json& doc) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path);
  if (!out || !(out << doc.dump(2) << "\n")) throw Error(path.string() + ": cannot write");
  std::cout << "wrote " << path.string() << "\n";
}

std::string command_line(int argc, char** argv) {
  std::string out = "faultline";
  for (int i = 1; i < argc; ++i) out += std::string(" ") + argv[i];
  return out;
}

// A calibration document written earlier; its name and base stand unless given again.
nlohmann::json load_calibration(const std::string& path, CalibrateArgs& c) {
  if (!fs::exists(path)) throw Error(path + ": no such calibration file");
  nlohmann::json doc = config::load_json_file(path); // a syntax error names line, column
  if (!doc.is_object() || !doc.contains("measurements") || !doc.contains("measured_by"))
    throw Error(path + ": expected a calibration document with \"measurements\" and "
                       "\"measured_by\" (written by faultline calibrate)");
  if (!c.named) c.job.name = doc.value("name", c.job.name);
  if (!c.based) c.job.base = doc.value("base", c.job.base);
  return doc;
}

} // namespace

int calibrate_command(int argc, char** argv) {
  for (int i = 2; i < argc; ++i)
    if (std::string(argv[i]) == "--help") return std::cout << kCalibrateUsage, 0;
  CalibrateArgs c = parse_calibrate(argc, argv);
  nlohmann::json doc;
  if (c.refit.empty()) {
    auto device = open_device(c.device);
    doc["measurements"] = measure(*device, c.job);
    doc["measured_by"] = command_line(argc, argv);
  } else {
    const nlohmann::json old = load_calibration(c.refit, c);
    doc["measurements"] = old["measurements"];
    doc["measured_by"] = old["measured_by"];
    doc["refit_by"] = command_line(argc, argv);
  }
  doc["name"] = c.job.name;
  doc["base"] = c.job.base;
  const FittedProfile fitted = fit(doc["measurements"], c.job);
  doc["fit"] = fitted.report;
  doc["fit_revision"] = git_revision();
  const fs::path dir = c.out_dir;
  write_json(dir / "calibration" / (c.job.name + ".json"), doc);
  write_json(dir / "gpus" / (c.job.name + ".json"), fitted.gpu);
  write_json(dir / "links" / (c.job.name + "-host.json"), fitted.host_link);
  if (!fitted.peer_link.is_null())
    write_json(dir / "links" / (c.job.name + "-peer.json"), fitted.peer_link);
  std::cout << "fault benchmarks: median |error| " << fitted.report["median_abs_error"] << ", max "
            << fitted.report["max_abs_error"] << "\n";
  return 0;
}

ReplayJob replay_job(int argc, char** argv) {
  return parse(argc, argv).job;
}

int replay_command(int argc, char** argv) {
  for (int i = 2; i < argc; ++i)
    if (std::string(argv[i]) == "--help") return std::cout << kUsage, 0;
  Parsed p = parse(argc, argv);
  if (!fs::exists(p.job.trace_path)) throw Error(p.job.trace_path + ": no such trace");
  auto device = open_device(p.device);
  const nlohmann::json result = run_replay(p.job, *device);
  const std::string text = result.dump(2) + "\n";
  if (p.out.empty()) return std::cout << text, 0;
  std::ofstream out(p.out);
  if (!out || !(out << text)) throw Error(p.out + ": cannot write results");
  return 0;
}

} // namespace faultline::live
