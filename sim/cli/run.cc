// `faultline run`: a program with a policy inside it, under a residency budget
// (sim/program/command.h does the work).
#include "sim/cli/app.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/core/error.h"
#include "sim/program/command.h"

#include <cstdlib>
#include <iostream>
#include <memory>

namespace faultline::cli {
namespace {

const char* kExplanation =
    "Runs COMMAND, unmodified, with policy P (default ondemand; --params is its policy.params\n"
    "object) inside it: the injection library reports the program's allocations, frees,\n"
    "launches with the allocations their arguments name, synchronisations and step marks to\n"
    "the policy host, the same code 'faultline sim' and 'faultline replay' run, and carries out\n"
    "its prefetches, evictions, discards and advice on a migration stream of its own.\n"
    "The budget B keeps managed memory on the GPU within bytes (8G) or a fraction of the\n"
    "program's footprint (0.5 or 50%), taken from --trace T (a trace of the same program, which\n"
    "the oracle also reads) or --footprint BYTES: before each launch, the allocations its\n"
    "arguments name (with --trace: the pages the trace's operation of the same number touched)\n"
    "must fit, and the oldest other chunks go to the host first; a launch's stream waits for\n"
    "those evictions (and each other stream at its next launch), nothing else waits. Without a\n"
    "budget the driver alone\n"
    "keeps the GPU's memory. The program's memory must fit the GPU's free memory less --margin\n"
    "(default 2G): a managed allocation beyond it stops the program with an error.\n"
    "--torch runs PyTorch's allocator on managed memory and marks a step after every optimizer\n"
    "step; --managed makes a CUDA program's cudaMalloc allocate managed memory.\n"
    "Writes a result document (\"backend\": \"program\") with a row per step to --out; the\n"
    "program's output passes through and its exit status is faultline's. Steps begin at the\n"
    "start and at each step mark a kernel follows; with --range profiler what runs before the\n"
    "first cudaProfilerStart is the set-up (step -1) and each cudaProfilerStart begins a step,\n"
    "so that the rows line up with a trace captured with --range profiler. --per-kernel adds a\n"
    "row per operation (\"kernels\": its GPU time; with --um-counters also CUPTI's fault groups\n"
    "and migrated bytes during it, which slow every fault), to set beside the simulator's\n"
    "per_kernel rows of the same trace; CUPTI's records cost the run a little, so time the\n"
    "policies without it. The policy hears a kernel's end at the program's next call after\n"
    "its launch, where its actions take effect (--kernel-ends launch); gpu: when the GPU has\n"
    "run it. With --trace every launch must be the trace's operation of its number: the run\n"
    "stops at the first that is not.";

struct Options {
  std::string policy = "ondemand", params, trace, out, keep, inject, range = "all",
              kernel_ends = "launch";
  std::optional<Budget> budget;
  uint64_t footprint = 0, iterations = 0, margin = 2ull << 30;
  bool torch = false, managed = false, per_kernel = false, um_counters = false;
  std::vector<std::string> command;
};

program::RunRequest request_of(const Options& o) {
  program::RunRequest r;
  r.policy = o.policy;
  if (!o.params.empty()) {
    r.params = nlohmann::json::parse(o.params, nullptr, false);
    if (!r.params.is_object())
      throw UsageError("--params " + o.params + ": expected a JSON object");
  }
  if (o.budget) {
    r.budget_bytes = o.budget->bytes;
    if (o.budget->fraction > 0) r.budget_fraction = o.budget->fraction;
  }
  r.footprint_bytes = o.footprint;
  r.trace = o.trace;
  r.iterations = o.iterations;
  r.torch = o.torch;
  r.managed = o.managed;
  r.margin = o.margin;
  if (o.range != "all" && o.range != "profiler")
    throw UsageError("--range " + o.range + ": expected all or profiler");
  r.range = o.range;
  if (o.kernel_ends != "launch" && o.kernel_ends != "gpu")
    throw UsageError("--kernel-ends " + o.kernel_ends + ": expected launch or gpu");
  r.kernel_ends = o.kernel_ends;
  r.inject = o.inject;
  r.out = o.out;
  r.keep = o.keep;
  r.per_kernel = o.per_kernel;
  if (o.um_counters && !o.per_kernel) throw UsageError("--um-counters: only with --per-kernel");
  r.um_counters = o.um_counters;
  r.command = o.command;
  r.command_line = command_line();
  return r;
}

} // namespace

void add_run(CLI::App& app) {
  CLI::App* sub =
      add_command(app, "run", "run a program with a policy inside it, under a budget (needs a GPU)",
                  kExplanation);
  auto o = std::make_shared<Options>();
  sub->add_option("--policy", o->policy, "the policy (default ondemand)")->type_name("P");
  sub->add_option("--params", o->params, "the policy's params, a JSON object")->type_name("JSON");
  add_budget(*sub, o->budget,
             "residency budget: a fraction (0.5), a percentage (50%) or bytes (8G)");
  add_bytes(*sub, "--footprint", o->footprint, "the program's managed footprint, for a fraction");
  sub->add_option("--trace", o->trace, "a trace of the same program: footprint, oracle's future")
      ->type_name("T");
  add_iterations(*sub, o->iterations, "steps the oracle runs the trace for");
  sub->add_option("--range", o->range,
                  "all (default) or profiler: steps as 'faultline capture --range' counts them")
      ->type_name("RANGE");
  sub->add_option("--kernel-ends", o->kernel_ends,
                  "launch (default): the policy hears a kernel's end once its launch is handled, "
                  "where its actions take effect; gpu: when the GPU has run it")
      ->type_name("WHEN");
  sub->add_flag("--torch", o->torch, "a PyTorch program (its allocator on managed memory)");
  sub->add_flag("--managed", o->managed, "make the program's cudaMalloc allocate managed memory");
  add_bytes(*sub, "--margin", o->margin, "GPU memory the program's memory must leave free (2G)");
  sub->add_flag("--per-kernel", o->per_kernel,
                "each operation's GPU time (CUPTI's records; they cost the run a little)");
  sub->add_flag("--um-counters", o->um_counters,
                "with --per-kernel, each operation's faults and migrations too (CUPTI's "
                "unified-memory counters; they slow every fault)");
  sub->add_option("--keep", o->keep, "keep the run's config, raw stream and measurements in DIR")
      ->type_name("DIR");
  sub->add_option("--inject", o->inject, "the injection library (default: next to this binary)")
      ->type_name("LIB");
  add_output(*sub, o->out, "where the result goes (default: stdout)")->type_name("R");
  sub->add_option("COMMAND", o->command, "the program to run and its arguments")->type_name("");
  sub->callback([o] {
    const int status = program::run_program(request_of(*o));
    if (status != 0) {
      std::cout.flush();
      std::exit(status); // the program's exit status is the run's
    }
  });
}

} // namespace faultline::cli
