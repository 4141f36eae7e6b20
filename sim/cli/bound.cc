// `faultline bound`: a lower bound on any policy's time (sim/run/bound.h does the work).
#include "sim/run/bound.h"

#include "sim/cli/app.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"

#include <memory>

namespace faultline::cli {

void add_bound(CLI::App& app) {
  CLI::App* sub = add_command(
      app, "bound", "a lower bound on any policy's time for a trace under a run config",
      "The larger of the trace's all-resident time and the fewest bytes any policy must move\n"
      "from the host (Belady's MIN over 64 KB big pages at the config's capacity) at the host\n"
      "link's best bandwidth; to set beside the oracle, which is a policy, not a bound. One job\n"
      "on one GPU. Writes JSON (stdout by default) with the resolved config and git revision.");
  struct Options {
    std::string config, trace, out;
    uint64_t iterations = 0;
  };
  auto o = std::make_shared<Options>();
  sub->add_option("--config", o->config, "the run config (configs/runs/*.json)")
      ->required()
      ->type_name("C");
  sub->add_option("--trace", o->trace, "the trace")->required()->type_name("T");
  add_iterations(*sub, o->iterations, "training steps (overrides the config's)");
  add_output(*sub, o->out, "where the bound goes (default: stdout)");
  sub->callback([o] { write_result(bound_document(o->config, o->trace, o->iterations), o->out); });
}

} // namespace faultline::cli
