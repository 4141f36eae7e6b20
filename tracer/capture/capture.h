// `faultline capture`: runs a program under the injection library and turns what it recorded
// into a trace (access-set mode: a timing pass and an access pass) or a summary of the unified-
// memory activity the program caused on its own (observe mode).
#pragma once

namespace faultline::capture {

// argv[1] is "capture". Returns the exit status; throws UsageError and TraceError.
int capture_command(int argc, char** argv);

} // namespace faultline::capture
