// `faultline replay`: the live backend's command line (sim/live/replay.h does the work).
#pragma once

namespace faultline::live {

// argv[1] is "replay". Returns the exit status; throws UsageError and Error.
int replay_command(int argc, char** argv);

} // namespace faultline::live
