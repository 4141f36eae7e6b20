#include "sim/live/command.h"

#include "sim/core/error.h"
#include "sim/live/replay.h"

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
    "usage: faultline replay --trace T [--policy P] [--params JSON] [--budget B]\n"
    "                        [--margin BYTES] [--drain-every N] [--per-kernel] [--device N]\n"
    "                        [--out results.json]\n"
    "Re-executes trace T on a real GPU under policy P (default ondemand; --params is its\n"
    "policy.params object) with a residency budget B: a fraction of the footprint (0.5 or 50%)\n"
    "or bytes (8G). Writes the same result fields as 'faultline sim', measured. Refuses when\n"
    "the trace's memory would come within --margin (default 2G) of the GPU's free memory.\n"
    "Needs libfaultline_live.so (built where the CUDA toolkit is) beside the binary or in\n"
    "$FAULTLINE_LIVE.\n";

uint64_t parse_bytes(const std::string& text, const std::string& what) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string unit = text.substr(used);
  const uint64_t scale = unit == ""    ? 1
                         : unit == "K" ? 1ull << 10
                         : unit == "M" ? 1ull << 20
                         : unit == "G" ? 1ull << 30
                                       : 0;
  if (used == 0 || v < 0 || scale == 0)
    throw UsageError(what + " " + text + ": expected bytes, optionally with K, M or G");
  return static_cast<uint64_t>(v * static_cast<double>(scale));
}

void parse_budget(const std::string& text, ReplayJob& job) {
  if (!text.empty() && text.back() == '%') {
    job.budget_fraction = std::atof(text.c_str()) / 100.0;
  } else if (text.find_first_of("KMG") != std::string::npos) {
    job.budget_bytes = parse_bytes(text, "--budget");
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

Parsed parse(int argc, char** argv) {
  Parsed p;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(a + " needs a value");
      return argv[++i];
    };
    if (a == "--trace")
      p.job.trace_path = value();
    else if (a == "--policy")
      p.job.policy = value();
    else if (a == "--params") {
      const std::string text = value();
      p.job.policy_params = nlohmann::json::parse(text, nullptr, false);
      if (!p.job.policy_params.is_object())
        throw UsageError("--params " + text + ": expected a JSON object");
    } else if (a == "--budget")
      parse_budget(value(), p.job);
    else if (a == "--margin")
      p.job.margin = parse_bytes(value(), "--margin");
    else if (a == "--drain-every")
      p.job.drain_every = std::max(1, std::atoi(value().c_str()));
    else if (a == "--device")
      p.device = std::atoi(value().c_str());
    else if (a == "--out")
      p.out = value();
    else if (a == "--per-kernel")
      p.job.per_kernel = true;
    else
      throw UsageError("replay: unknown option " + a);
  }
  if (p.job.trace_path.empty()) throw UsageError("replay: --trace is required");
  return p;
}

std::unique_ptr<LiveDevice> open_device(int device) {
  std::string path = std::getenv("FAULTLINE_LIVE") ? std::getenv("FAULTLINE_LIVE") : "";
  if (path.empty())
    path = (fs::read_symlink("/proc/self/exe").parent_path() / "libfaultline_live.so").string();
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library)
    throw Error("replay: cannot load the live backend " + path + " (" + dlerror() +
                "); it is built only where the CUDA toolkit is found");
  auto open = reinterpret_cast<OpenFunction>(dlsym(library, kOpenSymbol));
  if (!open) throw Error("replay: " + path + " has no " + kOpenSymbol);
  char message[512] = {};
  LiveDevice* d = open(device, message, sizeof(message));
  if (!d) throw Error("replay: GPU " + std::to_string(device) + " unavailable: " + message);
  return std::unique_ptr<LiveDevice>(d);
}

} // namespace

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
