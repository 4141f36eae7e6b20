// The subcommands of `faultline`, one file each (sim/cli/NAME.cc). Each add_NAME adds its
// subcommand to the top-level app (app.h): its options, its help and the callback that runs it
// once the whole command line has been read. The work itself lives in the subcommand's own
// folder (sim/run, sim/sweep, sim/live, sim/program, tracer/capture, ...); these files only read options.
#pragma once

#include "sim/live/replay.h"

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace faultline::cli {

void add_sim(CLI::App& app);
void add_sweep(CLI::App& app);
void add_synth(CLI::App& app);
void add_trace(CLI::App& app);
void add_capture(CLI::App& app);
void add_replay(CLI::App& app);
void add_run(CLI::App& app);
void add_calibrate(CLI::App& app);
void add_topology(CLI::App& app);
void add_alloc(CLI::App& app);
void add_results(CLI::App& app);
void add_config(CLI::App& app);
void add_bound(CLI::App& app);

// The replay request `faultline replay ARGS` would run: the run config of --config, then the
// options, wherever they stand. Throws UsageError, ConfigError and CLI::ParseError; touches no
// GPU. For tests.
live::ReplayRequest replay_request(const std::vector<std::string>& args);

} // namespace faultline::cli
