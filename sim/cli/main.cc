// The faultline command line: one binary, one subcommand per task. Each subcommand's options and
// help are in sim/cli/NAME.cc (commands.h); app.h says how help and errors read.
#include "sim/cli/app.h"
#include "sim/cli/commands.h"

int main(int argc, char** argv) {
  using namespace faultline::cli;
  auto app = make_app();
  add_sim(*app);
  add_bound(*app);
  add_sweep(*app);
  add_synth(*app);
  add_trace(*app);
  add_capture(*app);
  add_replay(*app);
  add_run(*app);
  add_calibrate(*app);
  add_topology(*app);
  add_alloc(*app);
  add_results(*app);
  add_config(*app);
  return run_app(*app, argc, argv);
}
