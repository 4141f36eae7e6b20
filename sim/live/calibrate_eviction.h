// The eviction's half of `faultline calibrate`'s fit (calibrate_fit.cc reads it). Internal to
// the calibrate layer.
#pragma once

#include "sim/config/run_config.h"
#include "sim/live/calibrate_measurements.h"

#include <string>

namespace faultline::live {

// The factor the eviction benchmark and the copies back to the host are priced at against the
// benchmark: a price given with `calibrate --refit --eviction-ns`, else for a per-machine
// calibration the mean of the benchmark and the samples spread through it, else 1.
double eviction_level_factor(const Measurements& m);

// What the measurements say of the eviction's samples and its price, for the fitted profile's
// sources ("" where they hold no samples and nothing is scaled).
std::string eviction_spread_text(const Measurements& m);

// From the eviction_runs benchmark: eviction_run_ns, eviction_populate_ns (its fresh case) and,
// where the full chunk (`full` ns with its copy) and the one-run case give a positive cost per
// page, eviction_page_ns and the eviction_ns left beside it, into `config`.
void split_eviction(const Measurements& m, Time full, config::RunConfig& config);

} // namespace faultline::live
