// Sweeps: a grid of simulations (traces x policies x capacities x any run-config values) run in
// parallel, resumable, into one results table.
//
// A sweep file (strictly read; see experiments/README.md):
//   {"name": "...", "base": "configs/runs/default.json" | {run config},
//    "traces": ["traces/real/resnet50.fltrace", ...],
//    "policies": ["ondemand", {"name": "pump", "params": {...}}, ...],
//    "capacity_fractions": [1.0, 0.5, ...],
//    "vary": {"/driver/eviction": ["fifo", "lru"], ...},   (JSON pointers into the run config)
//    "out": "out/sweeps/NAME"}
// Paths are relative to the working directory. Each finished point is written to
// OUT/points/NNNN.json at once (atomically); a rerun skips points whose file holds the same
// point computed by the same build (git revision), so an interrupted sweep resumes. OUT/results.csv
// and OUT/results.json list every point in grid order, whatever order they finished in.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace faultline::sweep {

struct Point {
  size_t index = 0;
  std::string trace;
  nlohmann::json policy; // {"name", "params"}
  double capacity_fraction = 0;
  nlohmann::json varied; // {pointer: value} for this point
  nlohmann::json config; // the run config this point runs

  nlohmann::json describe() const; // what identifies the point (stored with its result)
};

struct Sweep {
  std::string name;
  std::string out_dir;
  std::vector<Point> points; // grid order: traces, then policies, capacities, varied values
};

// The most points a sweep file may expand to.
constexpr uint64_t kMaxPoints = 100'000;

// Reads and expands a sweep file. Throws ConfigError naming the file and JSON path of the first
// bad value, or the grid's size when it holds more than kMaxPoints; every point's run config and
// policy are checked before anything runs.
Sweep load_sweep(const std::string& path);

// One machine's share of a sweep (`--shard I/N`, a Slurm array task): the points whose index
// modulo `count` is `index`.
struct Shard {
  size_t index = 0, count = 1;
  bool holds(const Point& p) const { return p.index % count == index; }
};

struct RunOptions {
  unsigned jobs = 0;     // threads (--jobs); 0: all cores
  bool progress = false; // a progress bar on stderr
  Shard shard;           // count 1: the whole sweep
};

struct Outcome {
  size_t ran = 0, reused = 0;
  bool tables = false; // written (the whole sweep ran, or a merge found every point)
};

// Runs the points of the shard not already done and, for the whole sweep, writes the tables.
// Throws the first point's error after the points in flight have finished; finished points stay
// on disk for the next run. A shard writes only its points: merge_sweep() writes the tables.
Outcome run_sweep(const Sweep& sweep, const RunOptions& options);

// The tables from the points on disk (each shard's), the same bytes a one-machine run writes.
// Throws ConfigError naming the points missing or computed by another build (the first 20).
Outcome merge_sweep(const Sweep& sweep);

} // namespace faultline::sweep
