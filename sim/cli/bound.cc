// `faultline bound`: a lower bound on any policy's time (sim/run/bound.h does the work).
#include "sim/run/bound.h"

#include "sim/cli/app.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/core/error.h"

#include <memory>

namespace faultline::cli {
namespace {

// "FIRST:LAST", LAST empty for the trace's end; UsageError otherwise.
StepRange step_range(const std::string& text) {
  const size_t colon = text.find(':');
  const auto number = [&](const std::string& s) {
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos)
      throw UsageError("--steps " + text +
                       ": expected FIRST:LAST, steps from 0 (LAST may be empty)");
    return static_cast<int64_t>(std::stoll(s));
  };
  if (colon == std::string::npos) number("");
  StepRange r;
  r.first = number(text.substr(0, colon));
  if (colon + 1 < text.size()) r.last = number(text.substr(colon + 1));
  if (r.last < r.first) throw UsageError("--steps " + text + ": LAST comes before FIRST");
  return r;
}

} // namespace

void add_bound(CLI::App& app) {
  CLI::App* sub = add_command(
      app, "bound", "a lower bound on any policy's time for a trace under a run config",
      "The larger of the trace's all-resident time and the fewest bytes any policy must move\n"
      "from the host (Belady's MIN over 64 KB big pages at the config's capacity) at the host\n"
      "link's best bandwidth; to set beside the oracle, which is a policy, not a bound. One job\n"
      "on one GPU. Writes JSON (stdout by default) with the resolved config and git revision.\n"
      "Its measured_steps bound the steps --steps FIRST:LAST names (default 0:, the set-up\n"
      "left out; LAST empty: to the end), to set beside a run's rows of the same steps.");
  struct Options {
    std::string config, trace, out, steps = "0:";
    uint64_t iterations = 0;
  };
  auto o = std::make_shared<Options>();
  sub->add_option("--config", o->config, "the run config (configs/runs/*.json)")
      ->required()
      ->type_name("C");
  sub->add_option("--trace", o->trace, "the trace")->required()->type_name("T");
  add_iterations(*sub, o->iterations, "training steps (overrides the config's)");
  add_output(*sub, o->out, "where the bound goes (default: stdout)");
  sub->add_option("--steps", o->steps, "the measured steps, FIRST:LAST (default 0:)")
      ->type_name("RANGE");
  sub->callback([o] {
    write_result(bound_document(o->config, o->trace, o->iterations, step_range(o->steps)), o->out);
  });
}

} // namespace faultline::cli
