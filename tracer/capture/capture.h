// `faultline capture`: runs a program under the injection library and turns what it recorded
// into a trace (access-set mode: a timing pass and an access pass) or a summary of the unified-
// memory activity the program caused on its own (observe mode). sim/cli/capture.cc reads the
// options.
#pragma once

#include "tracer/convert/assemble.h"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace faultline::capture {

struct Options {
  std::string out;
  std::string mode = "sanitize"; // sanitize, cupti or observe
  std::string range = "all";     // all or profiler
  std::string keep;              // keep the raw streams here (empty: a temporary directory)
  std::string inject;            // the injection library (empty: beside the binary)
  bool managed = false, torch = false, host_touches = true;
  bool no_program_pass = false; // the trace keeps the timing pass's clock
  uint64_t margin = 2ull << 30;
  nlohmann::json meta = nlohmann::json::object();
  std::vector<std::string> command; // the program and its arguments
};

// The injection library: `given`, else $FAULTLINE_INJECT, else beside the binary. UsageError when
// it does not exist (it is built only where the CUDA toolkit is found).
std::string find_injection_library(const std::string& given);
// The folder of the PyTorch hook (sitecustomize.py): beside the binary, else the source tree's.
std::string torch_hook_dir();

// Adds "KEY=VALUE" to `meta` (VALUE as JSON if it parses, else as a string). UsageError for
// text without "=" or a key the converter writes itself.
void add_meta(nlohmann::json& meta, const std::string& kv);

// Runs the capture `o` describes (mode and range already checked) and writes o.out. Returns
// the exit status; throws UsageError when the injection library is missing (it is built only
// where the CUDA toolkit is), Error when the program fails, TraceError for unreadable streams.
int run_capture(const Options& o);

// `faultline capture convert`: assembles a trace from raw streams recorded earlier.
int run_convert(const ConvertRequest& request);

} // namespace faultline::capture
