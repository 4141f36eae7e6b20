// libfaultline_program.so: the policy host inside the program, as the injection library's run
// mode loads it (seam.h). Turns each hook into a ProgramRun call and every exception into a
// message that names the policy and, for a launch, the kernel.
#include "sim/config/reader.h"
#include "sim/core/error.h"
#include "sim/program/program.h"
#include "sim/program/seam.h"
#include "sim/run/results.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <memory>
#include <string>

namespace faultline::program {
namespace {

class Module : public Hooks {
public:
  Module(RunConfig config, Device& device, uint64_t gpu_bytes)
      : out_(config.out), policy_(config.policy),
        run_(std::make_unique<ProgramRun>(std::move(config), device, gpu_bytes, clock_)) {
    // The result writer's tables are function statics: made now, before the injection library
    // registers the exit handler that calls finish(), so that they outlive it.
    totals_json(RunTotals{});
    step_json(StepResult{});
  }

  bool alloc(uint64_t address, uint64_t bytes, bool managed) override {
    return guard("an allocation", [&] { run_->alloc(address, bytes, managed); });
  }
  bool free(uint64_t address) override {
    return guard("a free", [&] { run_->free(address); });
  }
  bool launch(const char* name, const uint64_t* words, size_t count, uint64_t stream) override {
    const std::string what =
        "kernel #" + std::to_string(run_->kernels()) + " (" + std::string(name) + ")";
    return guard(what.c_str(),
                 [&] { run_->launch(name, std::vector<uint64_t>(words, words + count), stream); });
  }
  bool kernels_done(uint64_t count) override {
    return guard("a kernel's end", [&] { run_->kernels_done(count); });
  }
  bool synced() override {
    return guard("a synchronisation", [&] { run_->synced(); });
  }
  bool step() override {
    return guard("a step mark", [&] { run_->step(); });
  }
  bool range(bool on) override {
    return guard("a profiler range", [&] { run_->range(on); });
  }
  bool finish(uint64_t library_ns) override {
    return guard("the program's exit", [&] {
      nlohmann::json doc = run_->finish();
      doc["results"]["run_library_ns"] = library_ns;
      doc["results"]["run_hooks_ns"] = hooks_ns_;
      std::ofstream out(out_);
      out << doc.dump(1) << "\n";
      if (!out) throw Error(out_ + ": cannot write the run's measurements");
    });
  }
  const char* error() override { return error_.c_str(); }

private:
  // Runs a hook, adding its CPU time to hooks_ns_.
  template <typename F> bool guard(const char* during, F&& f) {
    const auto start = std::chrono::steady_clock::now();
    bool ok = true;
    try {
      f();
    } catch (const std::exception& e) {
      error_ = "policy \"" + policy_ + "\", at " + during + ": " + e.what();
      ok = false;
    }
    hooks_ns_ += static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                           std::chrono::steady_clock::now() - start)
                                           .count());
    return ok;
  }

  std::string out_, policy_, error_;
  uint64_t hooks_ns_ = 0; // CPU time in the hooks, the policy's decisions included
  RunClock clock_;
  std::unique_ptr<ProgramRun> run_;
};

} // namespace
} // namespace faultline::program

extern "C" __attribute__((visibility("default"))) faultline::program::Hooks*
faultline_program_open(faultline::program::Device* device, const char* config_path, char* message,
                       size_t message_size) {
  using namespace faultline;
  try {
    const std::string path = config_path ? config_path : "";
    program::RunConfig config = program::run_config_of(config::load_json_file(path), path);
    return new program::Module(std::move(config), *device, device->total_bytes());
  } catch (const std::exception& e) {
    std::snprintf(message, message_size, "%s", e.what());
    return nullptr;
  }
}
