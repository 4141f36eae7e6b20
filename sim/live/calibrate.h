// `faultline calibrate`: microbenchmarks on a real GPU through the LiveDevice seam (the same
// touch kernel and migration calls the live replay uses), and the fit of a GPU profile to them.
//
// measure() produces a measurements document; fit() turns one into a GPU profile and host-link
// profile (and a peer-link profile where two GPUs were measured). fit() needs no GPU: the
// committed measurements refit anywhere (`faultline calibrate --refit`).
#pragma once

#include "sim/live/device.h"

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace faultline::live {

struct CalibrationSettings {
  std::string name = "gpu";  // the profile's name: gpus/NAME.json, links/NAME-host.json
  std::string base = "h200"; // profile whose unmeasured values (memory, peer link) are kept
  uint32_t repeats = 5;      // each point is the median of this many runs
  uint64_t margin = 2ull << 30;
  bool quick = false; // fewer and smaller points, for tests and smoke runs
  // A per-machine calibration (`--from`): what can be measured in half a minute, the fault path
  // at twelve points of each kind and fitted from this profile's values, the memory size and the
  // peer link kept from it. Empty: the full calibration.
  std::string from;
  // With `from`: keep its fault path rather than fit one (`--keep-fault-path`; measurements
  // without "fault_path_fitted" refit that way).
  bool keep_fault_path = false;
  // CUPTI's unified-memory counters on while measuring (`--cupti-counters`): they slow the fault
  // path (sim/live/device.h's OpenOptions), so a profile for programs is measured without them.
  bool cupti_counters = false;
};

// Contract: with `from` set, resolves that profile before measuring anything (an unknown one
// throws Error) and records its fault path in the measurements' "fault_path_from", with
// "fault_path_fitted": true unless keep_fault_path (the fit starts there). Allocates at
// most the largest benchmark's managed memory at a time and refuses (Error) before allocating
// anything if that would come within the margin of the GPU's free memory. Times are host wall-clock
// nanoseconds, medians over `repeats`.
nlohmann::json measure(LiveDevice& device, const CalibrationSettings& settings);

// Contract: what a per-machine calibration from `from` would have measured, taken from a full
// calibration's measurements (the same benchmarks, a subset of their points), with
// "derived_from_full_calibration" set and "fault_path_fitted" unless `keep_fault_path`;
// `calibrate --refit FULL --from PROFILE`. Given a per-machine calibration's measurements, the
// same with `from`'s fault path instead of the one it recorded (moved to
// "fault_path_replaced"), kept or the fit's start as the document says ("fault_path_fitted"),
// kept always with `keep_fault_path`: a shipped fault path refitted since is carried to every
// instance calibrated with the earlier one. Throws Error naming the JSON path where a point is
// missing, or for measurements that are neither.
nlohmann::json per_machine_measurements(const nlohmann::json& full, const std::string& from,
                                        bool keep_fault_path = false);

// Contract: a full calibration's measurements with the fault benchmarks of other full
// calibrations of the same GPU model joined to its own ($.faults, each joined point tagged with
// "instance": its calibration's name), and "pooled_from" listing them (name, measured_by,
// device, points), so the fault path is fitted to several instances and a refit of the result
// needs none of the other files. Everything but $.faults stays `measurements`'. `others` are
// (path, calibration document) pairs. Throws Error naming the file for measurements that are a
// per-machine calibration's or have no $.faults array, or for another GPU model's device.
nlohmann::json
pooled_measurements(const nlohmann::json& measurements,
                    const std::vector<std::pair<std::string, nlohmann::json>>& others);

// Contract: the measurements of several calibrations of one instance made the same way at
// different moments (a campaign's calibrations before and after its runs), combined into one
// document: each time the median over them (the mean of the middle two for an even count,
// rounded to whole ns), and the samples spread through each ($.eviction.samples_ns) pooled, so
// the fit prices the costs the runs met across the campaign rather than the moment of one
// calibration (live/data/h200-9bc851db-drift/). Benchmark sizes (blocks,
// pages, chunks, pairs, bytes, runs, repeats and the like), strings, the kept fault path and the
// documents' shapes must agree; "combined_from" lists every calibration (path, name,
// measured_by). `calibrations` are (path, calibration document) pairs, at least two. Throws
// Error naming the file and the JSON path where one differs, or for one already combined.
//
// With CombineBy::kFastest the documents are checked the same way, but one moment's
// measurements are kept whole: the one whose fault benchmarks ($.faults[].ns) add up to the least.
// The lent machines' hosts switch between two states that price the fault path, the prefetch
// calls and the copies back to the host 1.5-1.9x apart (a dense fault batch up to 4.75 against
// over 5.25 us a 64 KB page in all but 7 of 117 calibrations, the same instance flipping from
// one calibration to the next: experiments/live/calibration.py states), and programs under `faultline run` ran in the faster one
// (experiments/live/data/h100-7856ec42-program/). Each moment in "combined_from" then carries
// "faults_ns", the kept one "kept": true; "combined_by" says which way.
enum class CombineBy { kMedian, kFastest };
nlohmann::json
combined_measurements(const std::vector<std::pair<std::string, nlohmann::json>>& calibrations,
                      CombineBy by = CombineBy::kMedian);

struct FittedProfile {
  nlohmann::json gpu;       // configs/gpus/NAME.json
  nlohmann::json host_link; // configs/links/NAME-host.json
  nlohmann::json peer_link; // configs/links/NAME-peer.json, or null when not measured
  nlohmann::json report;    // every benchmark: measured, simulated with the fit, error
};

// Contract: deterministic for a given measurements document; throws Error naming the JSON path
// of a missing or malformed measurement.
FittedProfile fit(const nlohmann::json& measurements, const CalibrationSettings& settings);

} // namespace faultline::live
