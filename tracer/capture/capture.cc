#include "tracer/capture/capture.h"

#include "sim/core/error.h"
#include "source_dir.h"
#include "tracer/capture/observe.h"
#include "tracer/convert/assemble.h"
#include "tracer/convert/raw_reader.h"
#include "version.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace faultline::capture {

namespace fs = std::filesystem;

namespace {

// The meta keys the converter writes itself.
const char* const kReserved[] = {"steps", "page_size", "access_granularity", "capture"};

} // namespace

std::string find_injection_library(const std::string& given) {
  std::string path = given;
  if (path.empty() && std::getenv("FAULTLINE_INJECT")) path = std::getenv("FAULTLINE_INJECT");
  if (path.empty())
    path = (fs::read_symlink("/proc/self/exe").parent_path() / "libfaultline_inject.so").string();
  if (!fs::exists(path))
    throw UsageError("the injection library " + path + " does not exist; it is built " +
                     "only where the CUDA toolkit is found (or pass --inject LIB)");
  return fs::absolute(path).string();
}

// The PyTorch hook: next to the binary (copied there by the build), else in the source tree.
std::string torch_hook_dir() {
  fs::path beside = fs::read_symlink("/proc/self/exe").parent_path() / "torch_hook";
  if (fs::exists(beside / "sitecustomize.py")) return beside.string();
  return std::string(FAULTLINE_SOURCE_DIR) + "/tracer/torch";
}

namespace {

struct PassResult {
  double seconds = 0;
  std::string raw, history;
};

PassResult run_pass(const Options& o, const std::string& lib, const std::string& mode,
                    const std::string& dir) {
  PassResult r;
  r.raw = dir + "/" + mode + ".raw";
  // The program pass runs the program as it is: its own memory, no allocator history.
  const bool program = mode == "program";
  if (o.torch && !program) r.history = dir + "/" + mode + ".history.json";
  auto began = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid < 0) throw Error("capture: fork failed");
  if (pid == 0) {
    setenv("CUDA_INJECTION64_PATH", lib.c_str(), 1);
    setenv("FAULTLINE_RAW_OUT", r.raw.c_str(), 1);
    setenv("FAULTLINE_MODE", mode.c_str(), 1);
    setenv("FAULTLINE_RANGE", o.range.c_str(), 1);
    setenv("FAULTLINE_MARGIN", std::to_string(o.margin).c_str(), 1);
    setenv("FAULTLINE_INJECT_LIB", lib.c_str(), 1); // the PyTorch hook marks steps through it
    setenv("FAULTLINE_HOST_TOUCHES", o.host_touches ? "1" : "0", 1);
    // The timing pass keeps the program's own timeline: CUPTI's unified-memory counters cost
    // several microseconds a launch (ResNet-50's step 16% longer on an H100,
    // experiments/capture/data/h100-timing-probe/). It needs them only for the host's CPU faults
    // when the access pass records no host touches.
    setenv("FAULTLINE_UM_COUNTERS", mode == "timing" && o.host_touches ? "0" : "1", 1);
    if (o.managed && !program) {
      setenv("FAULTLINE_MANAGED", "1", 1);
      setenv("LD_PRELOAD", lib.c_str(), 1);
    }
    if (o.torch) { // the hook marks steps in every pass
      if (!program) setenv("FAULTLINE_TORCH_HISTORY", r.history.c_str(), 1);
      const char* old = std::getenv("PYTHONPATH");
      std::string path = torch_hook_dir() + (old && *old ? ":" + std::string(old) : "");
      setenv("PYTHONPATH", path.c_str(), 1);
    }
    std::vector<char*> args;
    for (const std::string& a : o.command) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    std::cerr << "faultline capture: cannot run " << o.command[0] << ": " << strerror(errno)
              << "\n";
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string why = WIFEXITED(status)
                          ? "exited with status " + std::to_string(WEXITSTATUS(status))
                          : "was killed by signal " + std::to_string(WTERMSIG(status));
    std::string detail;
    if (fs::exists(r.raw)) {
      try {
        RawStream raw = read_raw(r.raw);
        if (!raw.error.empty()) detail = ": " + raw.error;
      } catch (const TraceError&) {
      }
    }
    throw Error("capture: the program " + why + " in the " + mode + " pass" + detail);
  }
  if (!fs::exists(r.raw))
    throw Error("capture: the program ran but never initialised CUDA, so nothing was recorded " +
                std::string("(is it a CUDA program?)"));
  return r;
}

std::string driver_version() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  std::getline(in, line);
  auto at = line.find("Kernel Module");
  if (at == std::string::npos) return "unknown";
  std::smatch m;
  std::string rest = line.substr(at);
  return std::regex_search(rest, m, std::regex(R"(\b\d+\.\d+(\.\d+)?\b)")) ? m.str() : "unknown";
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& a : v) s += (s.empty() ? "" : " ") + a;
  return s;
}

std::string work_dir(const Options& o) {
  if (!o.keep.empty()) {
    fs::create_directories(o.keep);
    return o.keep;
  }
  std::string tmpl = (fs::temp_directory_path() / "faultline-capture-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw Error("capture: cannot create a temporary directory");
  return tmpl;
}

double round2(double s) {
  return std::round(s * 100) / 100;
}

int run_access_set(const Options& o, const std::string& lib, const std::string& dir) {
  PassResult program;
  if (!o.no_program_pass) program = run_pass(o, lib, "program", dir);
  PassResult timing = run_pass(o, lib, "timing", dir);
  const std::string access_mode = o.mode == "cupti" ? "access" : "sanitize";
  PassResult access = run_pass(o, lib, access_mode, dir);
  ConvertRequest request{timing.raw, access.raw, timing.history, o.out, o.meta, program.raw};
  request.metadata["command"] = joined(o.command);
  request.metadata["driver"] = driver_version();
  request.metadata["faultline_git_revision"] = FAULTLINE_GIT_REVISION;
  request.metadata["capture_seconds"] = {{"timing_pass", round2(timing.seconds)},
                                         {access_mode + "_pass", round2(access.seconds)}};
  if (!o.no_program_pass)
    request.metadata["capture_seconds"]["program_pass"] = round2(program.seconds);
  nlohmann::json summary = convert_capture(request);
  std::cerr << "faultline capture: wrote " << o.out << "\n" << summary.dump(2) << "\n";
  return 0;
}

int run_observe(const Options& o, const std::string& lib, const std::string& dir) {
  PassResult pass = run_pass(o, lib, "observe", dir);
  nlohmann::json summary = observe_summary(read_raw(pass.raw));
  summary["command"] = joined(o.command);
  summary["driver"] = driver_version();
  summary["seconds"] = round2(pass.seconds);
  summary.update(o.meta);
  std::ofstream(o.out) << summary.dump(2) << "\n";
  std::cerr << "faultline capture: wrote " << o.out << "\n";
  return 0;
}

} // namespace

void add_meta(nlohmann::json& meta, const std::string& kv) {
  auto eq = kv.find('=');
  if (eq == std::string::npos || eq == 0) throw UsageError("--meta " + kv + ": expected KEY=VALUE");
  for (const char* reserved : kReserved)
    if (kv.substr(0, eq) == reserved)
      throw UsageError("--meta " + kv + ": the header key \"" + reserved +
                       "\" is the converter's own (traces/FORMAT.md)");
  nlohmann::json v = nlohmann::json::parse(kv.substr(eq + 1), nullptr, false);
  meta[kv.substr(0, eq)] = v.is_discarded() ? nlohmann::json(kv.substr(eq + 1)) : v;
}

int run_convert(const ConvertRequest& request) {
  nlohmann::json summary = convert_capture(request);
  std::cerr << "faultline capture: wrote " << request.out_path << "\n" << summary.dump(2) << "\n";
  return 0;
}

int run_capture(const Options& o) {
  const std::string lib = find_injection_library(o.inject);
  const std::string dir = work_dir(o);
  struct Cleanup { // raw streams are large: keep them only when asked to
    std::string dir;
    ~Cleanup() {
      if (!dir.empty()) fs::remove_all(dir);
    }
  } cleanup{o.keep.empty() ? dir : ""};
  try {
    return o.mode == "observe" ? run_observe(o, lib, dir) : run_access_set(o, lib, dir);
  } catch (const Error& e) {
    cleanup.dir.clear(); // the message names files in it
    throw Error(std::string(e.what()) + " (raw streams kept in " + dir + ")");
  }
}

} // namespace faultline::capture
