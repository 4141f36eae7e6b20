#include "tracer/capture/capture.h"
#include "source_dir.h"

#include "sim/core/error.h"
#include "sim/core/values.h"
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
namespace {

namespace fs = std::filesystem;

const char* kUsage =
    "usage: faultline capture [options] -- COMMAND [ARGS...]\n"
    "       faultline capture convert --timing RAW --access RAW [--history JSON] --out TRACE\n"
    "                                 [--meta KEY=VALUE]...\n"
    "Runs COMMAND, unmodified, under the injection library.\n"
    "  --mode sanitize    (default) run it twice: a timing pass with each launch's data resident\n"
    "                     (CUPTI), and an access pass under the CUDA Sanitizer API that patches\n"
    "                     every kernel to record the 64 KB pages it touches and records the\n"
    "                     host's touches of managed memory; check that both ran the same\n"
    "                     operations; write the trace to --out\n"
    "  --mode cupti       the same with the older access pass, which sends all managed memory to\n"
    "                     the host around every operation and reads CUPTI's migration records\n"
    "                     (for setups without the Sanitizer API; about 0.1 s per operation)\n"
    "  --mode observe     run it once, change nothing, write a JSON summary of the faults and\n"
    "                     migrations it caused to --out\n"
    "  --out FILE         output (required)\n"
    "  --managed          make the program's cudaMalloc allocate managed memory\n"
    "  --torch            record PyTorch's allocator blocks (implies --managed)\n"
    "  --range profiler   record only between cudaProfilerStart and cudaProfilerStop\n"
    "  --margin BYTES     GPU memory managed allocations must leave free (default 2G; K, M, G);\n"
    "                     a managed allocation beyond free memory minus this stops the program\n"
    "  --meta KEY=VALUE   add to the trace header (VALUE is JSON if it parses, else a string)\n"
    "  --keep DIR         keep the raw streams in DIR\n"
    "  --inject LIB       the injection library (default: next to this binary)\n"
    "  --no-host-touches  sanitize mode: do not protect managed memory from the CPU to record\n"
    "                     the host's touches (for programs with their own SIGSEGV handler)\n"
    "Steps: the start of the range and every faultline_mark_step() call (the --torch hook makes\n"
    "one after each optimizer step) or further cudaProfilerStart inside it mark a step; the trace\n"
    "header lists them under \"steps\".\n";

struct Options {
  std::string out, mode = "sanitize", range = "all", keep, inject;
  bool managed = false, torch = false, host_touches = true;
  uint64_t margin = 2ull << 30;
  nlohmann::json meta = nlohmann::json::object();
  std::vector<std::string> command;
};

void add_meta(nlohmann::json& meta, const std::string& kv) {
  auto eq = kv.find('=');
  if (eq == std::string::npos || eq == 0) throw UsageError("--meta " + kv + ": expected KEY=VALUE");
  for (const char* reserved : {"steps", "page_size", "access_granularity", "capture"})
    if (kv.substr(0, eq) == reserved)
      throw UsageError("--meta " + kv + ": the header key \"" + reserved +
                       "\" is the converter's own (traces/FORMAT.md)");
  nlohmann::json v = nlohmann::json::parse(kv.substr(eq + 1), nullptr, false);
  meta[kv.substr(0, eq)] = v.is_discarded() ? nlohmann::json(kv.substr(eq + 1)) : v;
}

Options parse(int argc, char** argv) {
  Options o;
  int i = 2;
  auto value = [&](const std::string& name) -> std::string {
    if (i + 1 >= argc) throw UsageError(name + " needs a value");
    return argv[++i];
  };
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      o.command.assign(argv + i + 1, argv + argc);
      break;
    }
    if (a == "--out")
      o.out = value(a);
    else if (a == "--mode")
      o.mode = value(a);
    else if (a == "--range")
      o.range = value(a);
    else if (a == "--keep")
      o.keep = value(a);
    else if (a == "--inject")
      o.inject = value(a);
    else if (a == "--margin")
      o.margin = parse_number(value(a), "--margin");
    else if (a == "--meta")
      add_meta(o.meta, value(a));
    else if (a == "--managed")
      o.managed = true;
    else if (a == "--no-host-touches")
      o.host_touches = false;
    else if (a == "--torch")
      o.torch = o.managed = true;
    else
      throw UsageError("capture: unknown option " + a);
  }
  if (o.mode == "access-set") o.mode = "cupti"; // the older name
  if (o.mode != "sanitize" && o.mode != "cupti" && o.mode != "observe")
    throw UsageError("--mode " + o.mode + ": expected sanitize, cupti or observe");
  if (o.range != "all" && o.range != "profiler")
    throw UsageError("--range " + o.range + ": expected all or profiler");
  if (o.out.empty()) throw UsageError("capture: --out is required");
  if (o.command.empty()) throw UsageError("capture: no command given after --");
  return o;
}

std::string find_injection_library(const std::string& given) {
  std::string path = given;
  if (path.empty() && std::getenv("FAULTLINE_INJECT")) path = std::getenv("FAULTLINE_INJECT");
  if (path.empty())
    path = (fs::read_symlink("/proc/self/exe").parent_path() / "libfaultline_inject.so").string();
  if (!fs::exists(path))
    throw UsageError("capture: the injection library " + path + " does not exist; it is built " +
                     "only where the CUDA toolkit is found (or pass --inject LIB)");
  return fs::absolute(path).string();
}

// The PyTorch hook: next to the binary (copied there by the build), else in the source tree.
std::string torch_hook_dir() {
  fs::path beside = fs::read_symlink("/proc/self/exe").parent_path() / "torch_hook";
  if (fs::exists(beside / "sitecustomize.py")) return beside.string();
  return std::string(FAULTLINE_SOURCE_DIR) + "/tracer/torch";
}

struct PassResult {
  double seconds = 0;
  std::string raw, history;
};

PassResult run_pass(const Options& o, const std::string& lib, const std::string& mode,
                    const std::string& dir) {
  PassResult r;
  r.raw = dir + "/" + mode + ".raw";
  if (o.torch) r.history = dir + "/" + mode + ".history.json";
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
    if (o.managed) {
      setenv("FAULTLINE_MANAGED", "1", 1);
      setenv("LD_PRELOAD", lib.c_str(), 1);
    }
    if (o.torch) {
      setenv("FAULTLINE_TORCH_HISTORY", r.history.c_str(), 1);
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
  PassResult timing = run_pass(o, lib, "timing", dir);
  const std::string access_mode = o.mode == "cupti" ? "access" : "sanitize";
  PassResult access = run_pass(o, lib, access_mode, dir);
  ConvertJob job{timing.raw, access.raw, timing.history, o.out, o.meta};
  job.metadata["command"] = joined(o.command);
  job.metadata["driver"] = driver_version();
  job.metadata["faultline_git_revision"] = FAULTLINE_GIT_REVISION;
  job.metadata["capture_seconds"] = {{"timing_pass", round2(timing.seconds)},
                                     {access_mode + "_pass", round2(access.seconds)}};
  nlohmann::json summary = convert_capture(job);
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

int convert_command(int argc, char** argv) {
  ConvertJob job;
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) throw UsageError("capture convert: " + a + " needs a value");
    std::string v = argv[++i];
    if (a == "--timing")
      job.timing_path = v;
    else if (a == "--access")
      job.access_path = v;
    else if (a == "--history")
      job.history_path = v;
    else if (a == "--out")
      job.out_path = v;
    else if (a == "--meta")
      add_meta(job.metadata, v);
    else
      throw UsageError("capture convert: unknown option " + a);
  }
  if (job.timing_path.empty() || job.access_path.empty() || job.out_path.empty())
    throw UsageError("capture convert: --timing, --access and --out are required");
  nlohmann::json summary = convert_capture(job);
  std::cerr << "faultline capture: wrote " << job.out_path << "\n" << summary.dump(2) << "\n";
  return 0;
}

} // namespace

int capture_command(int argc, char** argv) {
  if (argc >= 3 && (std::string(argv[2]) == "--help" || std::string(argv[2]) == "-h"))
    return std::cout << kUsage, 0;
  if (argc >= 3 && std::string(argv[2]) == "convert") return convert_command(argc, argv);
  Options o = parse(argc, argv);
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
