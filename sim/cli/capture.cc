// `faultline capture` and `faultline capture convert`: record a trace of a CUDA program
// (tracer/capture/capture.h does the work).
#include "tracer/capture/capture.h"

#include "sim/cli/app.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/core/error.h"
#include "tracer/convert/step_syncs.h"

#include <iostream>
#include <memory>
#include <vector>

namespace faultline::cli {
namespace {

const char* kExplanation =
    "Runs COMMAND, unmodified, under the injection library. --mode:\n"
    "  sanitize  (default) run it three times: a program pass with CUPTI's activity records\n"
    "            alone (the program's own timeline: when its CPU issues each call), a timing\n"
    "            pass with each launch's data resident (CUPTI), and an access pass under the\n"
    "            CUDA Sanitizer API that patches every kernel to record the 64 KB big pages it\n"
    "            touches and records the host's touches of managed memory; check that all ran\n"
    "            the same operations; write the trace, on the program pass's clock, to --out\n"
    "  cupti     the same with the older access pass, which sends all managed memory to the\n"
    "            host around every operation and reads CUPTI's migration records (for setups\n"
    "            without the Sanitizer API; about 0.1 s per operation)\n"
    "  observe   run it once, change nothing, write a JSON summary of the faults and\n"
    "            migrations it caused to --out\n"
    "--margin: a managed allocation beyond the GPU's free memory minus this stops the program.\n"
    "--no-host-touches: sanitize mode records the host's touches of managed memory by\n"
    "protecting it from the CPU; this turns that off (for programs with their own SIGSEGV\n"
    "handler).\n"
    "--no-program-pass: leave out the program pass; the trace keeps the timing pass's clock,\n"
    "whose callbacks slow a launch-bound program's CPU.\n"
    "Steps: the start of the range and every faultline_mark_step() call (the --torch hook makes\n"
    "one after each optimizer step) or further cudaProfilerStart inside it mark a step; the trace\n"
    "header lists them under \"steps\".\n"
    "'faultline capture convert' assembles a trace from raw streams kept earlier (--keep).";

// The options' values are checked here, once all are read, so that each error names its option.
void check(capture::Options& o, bool no_host_touches) {
  if (o.mode == "access-set") o.mode = "cupti"; // the older name
  if (o.mode != "sanitize" && o.mode != "cupti" && o.mode != "observe")
    throw UsageError("--mode " + o.mode + ": expected sanitize, cupti or observe");
  if (o.range != "all" && o.range != "profiler")
    throw UsageError("--range " + o.range + ": expected all or profiler");
  if (o.out.empty()) throw UsageError("--out is required");
  if (o.command.empty()) throw UsageError("no command given after --");
  if (o.torch) o.managed = true;
  if (no_host_touches) o.host_touches = false;
}

// --meta KEY=VALUE, as often as wanted, into `meta`.
void add_meta_option(CLI::App& app, nlohmann::json& meta) {
  // All occurrences reach the callback at once (a std::string one would see only the first).
  app.add_option_function<std::vector<std::string>>(
         "--meta",
         [&meta](const std::vector<std::string>& pairs) {
           for (const std::string& kv : pairs) capture::add_meta(meta, kv);
         },
         "add to the trace header (VALUE is JSON if it parses, else a string)")
      ->type_name("KEY=VALUE")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
}

void add_convert(CLI::App& capture) {
  CLI::App* sub =
      add_command(capture, "convert", "assemble a trace from the raw streams of a capture", "");
  auto request = std::make_shared<capture::ConvertRequest>();
  sub->add_option("--timing", request->timing_path, "the timing pass's raw stream")
      ->required()
      ->type_name("RAW");
  sub->add_option("--access", request->access_path, "the access pass's raw stream")
      ->required()
      ->type_name("RAW");
  sub->add_option("--history", request->history_path, "the PyTorch allocator history")
      ->type_name("JSON");
  sub->add_option("--program", request->program_path,
                  "the program pass's raw stream (its clock becomes the trace's)")
      ->type_name("RAW");
  add_output(*sub, request->out_path, "the trace to write")->required()->type_name("TRACE");
  add_meta_option(*sub, request->metadata);
  sub->callback([request] { capture::run_convert(*request); });
}

void add_step_syncs(CLI::App& capture) {
  CLI::App* sub = add_command(
      capture, "step-syncs",
      "add the step-end syncs a trace's capture missed (programs that wait for the GPU at every "
      "step's end)",
      "Traces captured before the tracer recorded cudaDeviceSynchronize lack the syncs that end\n"
      "the steps of a program like experiments/capture/workloads.py. This adds a device sync\n"
      "at each step's last record that waits until its kernels' recorded GPU end.");
  auto in = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  sub->add_option("--trace", *in, "the issue-time trace")->required()->type_name("TRACE");
  add_output(*sub, *out, "the trace to write")->required()->type_name("TRACE");
  sub->callback([in, out] {
    const uint64_t n = capture::add_step_syncs(*in, *out);
    std::cout << "{\"step_syncs_added\": " << n << "}\n";
  });
}

} // namespace

void add_capture(CLI::App& app) {
  CLI::App* sub = add_command(
      app, "capture", "record a trace of a CUDA program or PyTorch training run (needs a GPU)",
      kExplanation);
  auto o = std::make_shared<capture::Options>();
  auto no_host_touches = std::make_shared<bool>(false);
  sub->add_option("--mode", o->mode, "sanitize (default), cupti or observe")->type_name("MODE");
  add_output(*sub, o->out, "the trace (or the observe summary) to write; required")
      ->type_name("FILE");
  sub->add_flag("--managed", o->managed, "make the program's cudaMalloc allocate managed memory");
  sub->add_flag("--torch", o->torch, "record PyTorch's allocator blocks (implies --managed)");
  sub->add_option("--range", o->range,
                  "all (default) or profiler: only between cudaProfilerStart and -Stop")
      ->type_name("RANGE");
  add_bytes(*sub, "--margin", o->margin,
            "GPU memory managed allocations must leave free (default 2G)");
  add_meta_option(*sub, o->meta);
  sub->add_option("--keep", o->keep, "keep the raw streams in DIR")->type_name("DIR");
  sub->add_option("--inject", o->inject, "the injection library (default: next to this binary)")
      ->type_name("LIB");
  sub->add_flag("--no-host-touches", *no_host_touches,
                "sanitize mode: do not record the host's touches (see below)");
  sub->add_flag("--no-program-pass", o->no_program_pass,
                "keep the timing pass's clock: run the program twice, not three times");
  sub->add_option("COMMAND", o->command, "the program to run and its arguments")->type_name("");
  add_convert(*sub);
  add_step_syncs(*sub);
  sub->callback([o, no_host_touches, sub] {
    if (sub->got_subcommand("convert") || sub->got_subcommand("step-syncs")) return;
    check(*o, *no_host_touches);
    capture::run_capture(*o);
  });
}

} // namespace faultline::cli
