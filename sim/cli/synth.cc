// `faultline synth`: a synthetic trace (sim/synth/synth.h does the work).
#include "sim/synth/synth.h"

#include "sim/cli/app.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"

#include <iostream>
#include <map>
#include <memory>
#include <tuple>

namespace faultline::cli {

void add_synth(CLI::App& app) {
  CLI::App* sub = add_command(
      app, "synth", "write a synthetic trace (tests and benchmarks only)",
      "Writes a synthetic trace. stream: K kernels sweep K slices in turn; random: K kernels\n"
      "touch random 64 KB big pages; dnn: L layers forward then backward then an optimizer\n"
      "step, weights reused every iteration, activations freed in reverse order; window: one\n"
      "kernel, launched K times with the same arguments, reads two of K + 1 slices, a slice\n"
      "further on each launch; pages: a host-written array, the held pages of each 2 MB block\n"
      "brought to the GPU by one kernel, then a kernel touching the touch pages (one step,\n"
      "--iterations ignored; experiments/live/fault_cases.py). Each iteration\n"
      "is a training step in the header (\"steps\"). SIZE takes K, M, G (powers of 1024).\n"
      "Defaults: footprint 1G, iterations 2, seed 1, kernels 16, layers 12, touches 1,\n"
      "ns-per-access 100.");
  struct Options {
    std::string pattern, out;
    // The synth parameters given, by their key in synth::params_from_json.
    std::map<std::string, std::optional<uint64_t>> numbers;
  };
  auto o = std::make_shared<Options>();
  sub->add_option("--pattern", o->pattern, "stream, random, dnn, window or pages")
      ->required()
      ->type_name("P");
  add_output(*sub, o->out, "the trace to write")->required()->type_name("T");
  add_bytes(*sub, "--footprint", o->numbers["footprint"], "bytes the trace touches (default 1G)")
      ->type_name("SIZE");
  const std::vector<std::tuple<std::string, std::string, std::string>> counts = {
      {"--iterations", "iterations", "training steps (default 2)"},
      {"--seed", "seed", "random seed (default 1)"},
      {"--kernels", "kernels_per_iteration", "kernels per iteration (default 16)"},
      {"--layers", "layers", "dnn: layers (default 12)"},
      {"--touches", "touches", "times a kernel reads each 64 KB big page (default 1)"},
      {"--ns-per-access", "ns_per_access", "kernel time per access (default 100)"},
      {"--touch-first", "touch_first", "pages: first 64 KB page of a block touched (default 0)"},
      {"--touch-step", "touch_step", "pages: touched pages every N pages (default 1)"},
      {"--touch-width", "touch_width", "pages: pages touched in a row a step (default 1)"},
      {"--held-first", "held_first", "pages: first page of a block held before (default 0)"},
      {"--held-step", "held_step", "pages: held pages every N pages (default 0: none)"},
      {"--launch-gap-ns", "launch_gap_ns",
       "an issue-time trace whose CPU issues a record every N ns, each step ending in a sync "
       "(default 0: a serial trace)"}};
  for (const auto& [option, key, help] : counts) add_count(*sub, option, o->numbers[key], help);
  sub->callback([o] {
    nlohmann::json p = {{"pattern", o->pattern}};
    for (const auto& [key, value] : o->numbers)
      if (value) p[key] = *value;
    const synth::Params params = synth::params_from_json(p, "synth options");
    const uint64_t n = synth::write_trace(params, o->out, command_line());
    std::cerr << "wrote " << o->out << ": " << n << " accesses\n";
  });
}

} // namespace faultline::cli
