// `faultline replay` and `faultline calibrate`: the live backend's command lines
// (sim/live/replay.h and sim/live/calibrate.h do the work).
#pragma once

#include "sim/live/replay.h"

namespace faultline::live {

// The replay job `faultline replay ARGS` would run (argv[1] is "replay"): the run config of
// --config, then the options. Throws UsageError and ConfigError; touches no GPU.
ReplayJob replay_job(int argc, char** argv);

// argv[1] is "replay". Returns the exit status; throws UsageError and Error.
int replay_command(int argc, char** argv);
// argv[1] is "calibrate".
int calibrate_command(int argc, char** argv);

} // namespace faultline::live
