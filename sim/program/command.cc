#include "sim/program/command.h"

#include "policies/registry.h"
#include "sim/config/reader.h"
#include "sim/core/error.h"
#include "sim/program/kernel_rows.h"
#include "sim/run/results.h"
#include "sim/trace/inspect.h"
#include "tracer/capture/capture.h"
#include "tracer/convert/raw_reader.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sys/wait.h>
#include <unistd.h>

namespace faultline::program {
namespace {

namespace fs = std::filesystem;

// libfaultline_program.so: $FAULTLINE_PROGRAM, else beside the binary.
std::string module_path() {
  const char* given = std::getenv("FAULTLINE_PROGRAM");
  const fs::path path = given && *given ? fs::path(given)
                                        : fs::read_symlink("/proc/self/exe").parent_path() /
                                              "libfaultline_program.so";
  if (!fs::exists(path))
    throw UsageError("the policy host module " + path.string() + " does not exist (it is built " +
                     "with the faultline binary; $FAULTLINE_PROGRAM names another)");
  return fs::absolute(path).string();
}

// A fresh folder for the run's files, removed at the end unless kept.
struct Scratch {
  explicit Scratch(const std::string& keep) : keep_(!keep.empty()) {
    if (keep_) {
      dir = keep;
      fs::create_directories(dir);
      return;
    }
    std::string pattern = (fs::temp_directory_path() / "faultline-run-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw Error("faultline run: cannot make a temporary folder");
    dir = pattern;
  }
  ~Scratch() {
    std::error_code ignored;
    if (!keep_) fs::remove_all(dir, ignored);
  }
  std::string dir;

private:
  bool keep_;
};

// Puts `value` first in the colon-separated list the environment variable `name` holds.
void prepend_env(const char* name, const std::string& value) {
  std::string list = value;
  if (const char* old = std::getenv(name); old && *old) list.append(":").append(old);
  setenv(name, list.c_str(), 1);
}

int run_child(const RunRequest& r, const std::string& lib, const std::string& module,
              const Scratch& s) {
  const pid_t pid = fork();
  if (pid < 0) throw Error("faultline run: fork failed");
  if (pid == 0) {
    setenv("CUDA_INJECTION64_PATH", lib.c_str(), 1);
    setenv("FAULTLINE_MODE", "run", 1);
    setenv("FAULTLINE_RAW_OUT", (s.dir + "/run.raw").c_str(), 1);
    setenv("FAULTLINE_MARGIN", std::to_string(r.margin).c_str(), 1);
    setenv("FAULTLINE_INJECT_LIB", lib.c_str(), 1); // the PyTorch hook marks steps through it
    setenv("FAULTLINE_PROGRAM_LIB", module.c_str(), 1);
    setenv("FAULTLINE_RUN_CONFIG", (s.dir + "/config.json").c_str(), 1);
    setenv("FAULTLINE_UM_COUNTERS", r.per_kernel && r.um_counters ? "1" : "0", 1);
    setenv("FAULTLINE_RUN_PER_KERNEL", r.per_kernel ? "1" : "0", 1);
    setenv("FAULTLINE_HOST_TOUCHES", "0", 1);
    unsetenv("FAULTLINE_PROBE"); // a capture's probe would leave the callbacks out
    if (r.managed || r.torch) {
      setenv("FAULTLINE_MANAGED", "1", 1);
      prepend_env("LD_PRELOAD", lib);
    }
    if (r.torch) prepend_env("PYTHONPATH", capture::torch_hook_dir());
    std::vector<char*> args;
    for (const std::string& a : r.command) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    std::cerr << "faultline run: cannot run " << r.command[0] << ": " << std::strerror(errno)
              << "\n";
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// What the injection library said of the program: its GPU, its error if it stopped it.
nlohmann::json raw_summary(const std::string& path, std::string& error) {
  nlohmann::json out = nlohmann::json::object();
  if (!fs::exists(path)) return out;
  try {
    const capture::RawStream raw = capture::read_raw(path);
    error = raw.error;
    for (const char* key : {"gpu", "gpu_total", "gpu_free_at_start", "cuda_driver_api"})
      if (raw.meta.contains(key)) out[key] = raw.meta[key];
  } catch (const TraceError&) {
    // A program stopped mid-record leaves a stream without its end; the exit status says why.
  }
  return out;
}

} // namespace

uint64_t budget_bytes(const RunRequest& r) {
  if (r.budget_bytes) return r.budget_bytes;
  uint64_t footprint = r.footprint_bytes;
  if (!footprint && !r.trace.empty()) footprint = trace::compute_stats(r.trace).footprint_bytes();
  if (!footprint) {
    if (r.budget_fraction >= 1.0) return 0;
    char fraction[32];
    std::snprintf(fraction, sizeof(fraction), "%g", r.budget_fraction);
    throw UsageError("--budget " + std::string(fraction) +
                     ": a fraction needs the program's footprint: --trace T (a trace of the same "
                     "program) or --footprint BYTES; or give the budget in bytes (8G)");
  }
  // As the replay rounds it (live::budget_chunks): whole chunks, rounded up.
  const double chunks =
      std::ceil(r.budget_fraction * static_cast<double>(footprint / kBlockSize) - 1e-9);
  return std::max<uint64_t>(1, static_cast<uint64_t>(chunks)) * kBlockSize;
}

int run_program(const RunRequest& r) {
  if (r.command.empty()) throw UsageError("faultline run: no program given after --");
  if (!r.trace.empty() && !fs::exists(r.trace))
    throw UsageError("--trace " + r.trace + ": no such file");
  const auto& registry = policies::Registry::instance();
  if (!registry.has(r.policy))
    throw UsageError("--policy " + r.policy +
                     ": unknown policy; known policies: " + registry.known());
  try { // params the policy does not take fail here, before the program starts
    registry.create(r.policy, r.params, "--params");
  } catch (const ConfigError& e) {
    throw UsageError(e.what());
  }
  // The trace is read once: its footprint sizes the budget and goes into the result.
  const uint64_t trace_footprint =
      r.trace.empty() ? 0 : trace::compute_stats(r.trace).footprint_bytes();
  RunRequest sized = r;
  if (!sized.footprint_bytes) sized.footprint_bytes = trace_footprint;
  RunConfig config;
  config.policy = r.policy;
  config.params = r.params;
  config.budget_bytes = budget_bytes(sized);
  config.trace = r.trace.empty() ? "" : fs::absolute(r.trace).string();
  config.iterations = r.iterations;
  config.range = r.range;
  config.kernel_ends = r.kernel_ends;
  const std::string lib = capture::find_injection_library(r.inject);
  const std::string module = module_path();
  Scratch scratch(r.keep);
  config.out = scratch.dir + "/measured.json";
  {
    std::ofstream out(scratch.dir + "/config.json");
    out << to_json(config).dump(1) << "\n";
    if (!out) throw Error(scratch.dir + "/config.json: cannot write the run's config");
  }

  const auto began = std::chrono::steady_clock::now();
  const int status = run_child(r, lib, module, scratch);
  const auto wall = std::chrono::steady_clock::now() - began;
  std::string stopped;
  nlohmann::json gpu = raw_summary(scratch.dir + "/run.raw", stopped);
  if (!stopped.empty()) throw Error("faultline run: the run stopped the program: " + stopped);
  if (!fs::exists(config.out)) {
    if (status > 128)
      std::cerr << "faultline run: " << r.command[0] << " was ended by signal " << status - 128
                << " before the run's measurements were written\n";
    if (status != 0) return status; // the program's own output says why
    throw Error("faultline run: " + r.command[0] +
                " made no CUDA call the run could see (no allocation or launch): nothing to "
                "measure");
  }
  const nlohmann::json measured = config::load_json_file(config.out);
  nlohmann::json doc;
  doc["backend"] = "program";
  doc["faultline"] = {{"git_revision", git_revision()}};
  doc["program"] = {{"command", r.command},
                    {"exit_status", status},
                    {"wall_ns", std::chrono::duration_cast<std::chrono::nanoseconds>(wall).count()},
                    {"torch", r.torch},
                    {"managed", r.managed || r.torch},
                    {"run_command", r.command_line}};
  doc["program"].update(gpu);
  // The config as the replay resolves its own (live::resolved_config), and what only a program
  // run has.
  const nlohmann::json& ran = measured.at("config");
  const bool fraction = r.budget_bytes == 0 && config.budget_bytes != 0;
  doc["config"] = {
      {"policy", {{"name", ran.at("policy")}, {"params", ran.at("params")}}},
      {"budget",
       {{"fraction_of_footprint", fraction ? nlohmann::json(r.budget_fraction) : nlohmann::json()},
        {"bytes", r.budget_bytes ? nlohmann::json(r.budget_bytes) : nlohmann::json()},
        {"resolved_bytes", config.budget_bytes},
        {"chunks", ran.at("budget_chunks")}}},
      {"books", ran.at("books")},
      {"margin", r.margin},
      {"range", r.range},
      {"kernel_ends", r.kernel_ends},
      {"iterations", r.iterations}};
  if (r.footprint_bytes) doc["config"]["footprint_bytes"] = r.footprint_bytes;
  if (!r.trace.empty()) {
    doc["trace"] = {{"path", r.trace}, {"footprint_bytes", trace_footprint}};
    doc["config"]["trace"] = r.trace;
  }
  doc["results"] = measured.at("results");
  doc["steps"] = measured.at("steps");
  doc["config"]["per_kernel"] = r.per_kernel;
  doc["config"]["um_counters"] = r.per_kernel && r.um_counters;
  if (r.per_kernel)
    doc["kernels"] = kernel_rows(capture::read_raw(scratch.dir + "/run.raw"), r.um_counters);
  if (r.out.empty()) {
    std::cout << doc.dump(2) << "\n";
  } else {
    std::ofstream out(r.out);
    out << doc.dump(2) << "\n";
    if (!out) throw Error(r.out + ": cannot write results");
  }
  return status;
}

} // namespace faultline::program
