// `faultline replay` and `faultline calibrate`: the live backend's command lines
// (sim/live/replay.h and sim/live/calibrate.h do the work).
#pragma once

namespace faultline::live {

// argv[1] is "replay". Returns the exit status; throws UsageError and Error.
int replay_command(int argc, char** argv);
// argv[1] is "calibrate".
int calibrate_command(int argc, char** argv);

} // namespace faultline::live
