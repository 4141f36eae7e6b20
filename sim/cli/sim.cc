// `faultline sim`: one trace under one run config (sim/run/results.h does the work).
#include "sim/cli/app.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/run/results.h"

#include <memory>

namespace faultline::cli {

void add_sim(CLI::App& app) {
  CLI::App* sub = add_command(
      app, "sim", "simulate a trace under a run config",
      "Simulates trace T under run config C and writes the results as JSON (stdout by default),\n"
      "with the resolved config, the git revision and a row per training step. --iterations N\n"
      "runs N steps (overrides the config's \"iterations\"): the trace's first N, or all of them\n"
      "and then its last step again until N have run. --timeline writes Chrome trace-event JSON\n"
      "(open it in the Perfetto UI). A progress line goes to stderr when it is a terminal.\n"
      "--check-invariants verifies the memory model after every record (slow).");
  struct Options {
    SimRequest request;
    std::string out;
    Progress progress;
  };
  auto o = std::make_shared<Options>();
  sub->add_option("--config", o->request.config_path, "the run config (configs/runs/*.json)")
      ->required()
      ->type_name("C");
  sub->add_option("--trace", o->request.trace_path, "the trace to simulate")
      ->required()
      ->type_name("T");
  add_output(*sub, o->out, "where the results go (default: stdout)");
  add_output(*sub, o->request.timeline_path, "write a Chrome trace-event timeline", "--timeline");
  add_iterations(*sub, o->request.iterations, "training steps to run (overrides the config's)");
  add_progress(*sub, o->progress);
  sub->add_flag("--check-invariants", o->request.check_invariants,
                "verify the memory model after every record (slow)");
  sub->callback([o] {
    o->request.progress = o->progress.wanted();
    write_result(run_sim(o->request), o->out);
  });
}

} // namespace faultline::cli
