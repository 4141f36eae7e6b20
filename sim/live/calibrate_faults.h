// The fault path's half of `faultline calibrate`'s fit: every fault benchmark is simulated as a
// one-kernel trace with the same touches, and the fault-path costs are chosen to minimise the
// squared log error of simulated against measured time. Internal to the calibrate layer.
//
// A per-machine calibration (`calibrate --from PROFILE`) fits the same values to the machine's
// twelve benchmarks of each kind, starting from PROFILE's (fit_from), or with
// --keep-fault-path keeps PROFILE's and reports how well they fit (configs/README.md,
// "Calibrating one machine").
#pragma once

#include "sim/config/run_config.h"
#include "sim/live/calibrate_measurements.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace faultline::live {

// The fitted values, in this order: the fault path's costs, the host link's per-copy overhead
// (both directions) and the outstanding faults before a kernel stalls.
inline constexpr const char* kFaultParams[] = {
    "batch_fixed_ns", "per_fault_ns",     "per_vablock_ns",   "page_table_update_ns",
    "populate_ns",    "fault_migrate_ns", "copy_overhead_ns", "fault_parallelism"};
inline constexpr size_t kFaultParamCount = sizeof(kFaultParams) / sizeof(kFaultParams[0]);

// The order of a fault benchmark's touches: block by block (each block's pages together), or
// strided (one page of every block, then the next page of every block, ...), as a kernel whose
// threads each sweep their own part of a large range touches it.
enum class FaultOrder { kBlock, kStrided };
const char* fault_order_name(FaultOrder order);
// The big pages (64 KB, from the allocation's start) a benchmark of `blocks` blocks touches, `k`
// evenly spread pages a block, in `order`; the device and the simulated trace share it.
std::vector<uint64_t> fault_touches(uint64_t blocks, uint64_t k, FaultOrder order);

// Writes `x` (kFaultParams' order) into a run config.
void set_fault_params(config::RunConfig& c, const std::vector<double>& x);

// The values a per-machine calibration starts its fit from (or keeps): PROFILE's fault path, as
// the measurements document's "fault_path_from" ({"profile": PROFILE, NAME: value for each of
// kFaultParams}), so a refit needs no profile file. Throws Error for an unknown profile.
nlohmann::json fault_path_of(const std::string& profile);

class FaultFit {
public:
  // Reads $.faults (every element's JSON path in a complaint) and writes each benchmark's trace
  // into a temporary folder that lives as long as this object.
  FaultFit(config::RunConfig config, const Measurements& m);
  ~FaultFit();
  FaultFit(const FaultFit&) = delete;
  FaultFit& operator=(const FaultFit&) = delete;

  // Every value fitted, from fixed starting values (never the base profile's, so a refit
  // reproduces a committed profile).
  std::vector<double> fit_all();
  // Every value fitted from `start` (a per-machine calibration's: the profile it starts from,
  // recorded in its measurements), in at most `evaluations` simulations of the benchmarks.
  std::vector<double> fit_from(std::vector<double> start, unsigned evaluations);
  // Every benchmark measured against simulated with `x`, and the median and max |error|.
  nlohmann::json report(const std::vector<double>& x);

private:
  struct Bench {
    bool migrate;
    uint64_t blocks, pages_per_block;
    FaultOrder order;
    Time measured;
    std::string trace;
  };
  Time simulate(const Bench& b, const std::vector<double>& x);
  std::vector<double> fit(std::vector<double> x, unsigned evaluations);
  double error(const std::vector<double>& x);

  config::RunConfig config_;
  std::filesystem::path dir_;
  std::vector<Bench> benches_;
};

} // namespace faultline::live
