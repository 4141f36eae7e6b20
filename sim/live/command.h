// What `faultline replay` and `faultline calibrate` do once their options are read
// (sim/cli/replay.cc, sim/cli/calibrate.cc): the run config's part that the replay can take,
// the live backend loaded at run time, and the calibration's documents.
#pragma once

#include "sim/live/calibrate.h"
#include "sim/live/device.h"
#include "sim/live/replay.h"

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace faultline::live {

// Sets the request's policy, params, budget and iterations from the run config at `path` (the one
// `faultline sim` takes). UsageError for a config of several GPUs or neighbour jobs, which has
// no live counterpart; ConfigError for a config that does not read. Warns on stderr that a
// capacity mode "driver" becomes a budget.
void apply_run_config(const std::string& path, ReplayRequest& request);

// Loads libfaultline_live.so ($FAULTLINE_LIVE, else beside the binary) and opens GPU `device`
// with `options`. Error naming the library when it cannot be loaded (it is built only where the
// CUDA toolkit is found) or the GPU when it cannot be opened.
std::unique_ptr<LiveDevice> open_device(int device, const OpenOptions& options);

// Error when request.trace_path does not exist (before any GPU is touched); else run_replay on
// GPU `device`.
nlohmann::json replay_on_gpu(const ReplayRequest& request, int device);

struct CalibrateRequest {
  CalibrationSettings settings;
  std::string refit;                // measurements to fit again without a GPU (empty: measure)
  std::vector<std::string> pool;    // with refit: full calibrations whose fault points join
  std::vector<std::string> combine; // with refit: the same instance's calibrations at other moments
  CombineBy combine_by = CombineBy::kMedian; // with combine: how the moments combine
  // Measuring: this many calibrations in a row, the fastest moment kept (CombineBy::kFastest).
  uint32_t moments = 1;
  uint64_t eviction_ns = 0;        // with refit: $.eviction.priced_at_ns (0: the measured level)
  std::string out_dir = "configs"; // DIR/calibration, DIR/gpus, DIR/links
  int device = 0;
  bool named = false, based = false; // --name and --base given: they override a refit's
};

// Measures GPU c.device (or reads c.refit), fits a profile and writes DIR/calibration/NAME.json,
// DIR/gpus/NAME.json and DIR/links/NAME-host.json (and NAME-peer.json), naming each on stdout.
// `command_line` is recorded as how the measurements (or the refit) were made.
void run_calibrate(CalibrateRequest& c, const std::string& command_line);

} // namespace faultline::live
