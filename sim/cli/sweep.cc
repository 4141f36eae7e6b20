// `faultline sweep`: a grid of simulations in parallel (sim/sweep/sweep.h does the work), on one
// machine or in shards over several (a Slurm job array: experiments/slurm/sweep.sbatch).
#include "sim/sweep/sweep.h"

#include "sim/cli/app.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/core/error.h"

#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>

namespace faultline::cli {
namespace {

uint64_t whole_number(const std::string& text, const std::string& what) {
  size_t used = 0;
  uint64_t value = 0;
  try {
    value = std::stoull(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || text[0] == '-')
    throw UsageError(what + ": expected a whole number, got \"" + text + "\"");
  return value;
}

// "I/N": shard I (from 0) of N.
sweep::Shard parse_shard(const std::string& text, const std::string& what) {
  const size_t slash = text.find('/');
  if (slash == std::string::npos)
    throw UsageError(what + ": expected I/N (shard I of N, I from 0), got \"" + text + "\"");
  const sweep::Shard shard{whole_number(text.substr(0, slash), what),
                           whole_number(text.substr(slash + 1), what)};
  if (shard.count == 0 || shard.index >= shard.count)
    throw UsageError(what + ": shard " + std::to_string(shard.index) + " of " +
                     std::to_string(shard.count) + " does not exist (I from 0 to N - 1)");
  return shard;
}

// Inside a Slurm job array: this task's shard (SLURM_ARRAY_TASK_ID less SLURM_ARRAY_TASK_MIN, of
// SLURM_ARRAY_TASK_COUNT).
std::optional<sweep::Shard> slurm_shard() {
  const char* id = std::getenv("SLURM_ARRAY_TASK_ID");
  const char* count = std::getenv("SLURM_ARRAY_TASK_COUNT");
  if (!id || !count) return std::nullopt;
  const char* min = std::getenv("SLURM_ARRAY_TASK_MIN");
  const uint64_t first = min ? whole_number(min, "SLURM_ARRAY_TASK_MIN") : 0;
  const uint64_t task = whole_number(id, "SLURM_ARRAY_TASK_ID");
  if (task < first)
    throw UsageError("SLURM_ARRAY_TASK_ID " + std::to_string(task) + " is below " +
                     "SLURM_ARRAY_TASK_MIN " + std::to_string(first));
  return parse_shard(std::to_string(task - first) + "/" + count,
                     "SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT");
}

} // namespace

void add_sweep(CLI::App& app) {
  CLI::App* sub = add_command(
      app, "sweep", "run a grid of simulations in parallel into one results table",
      "Expands the sweep's grid (traces x policies x capacity fractions x varied config values),\n"
      "runs the points not already finished on N threads (default: all cores) and writes\n"
      "OUT/points/NNNN.json per point and OUT/results.csv and OUT/results.json for all.\n"
      "An interrupted sweep resumes where it stopped. The sweep file format is in\n"
      "experiments/README.md.\n"
      "On a cluster: --shard I/N runs only the points whose index modulo N is I (inside a Slurm\n"
      "job array, by default this task's share), and --merge then writes the tables from every\n"
      "shard's points, the same bytes a one-machine run writes (experiments/slurm/).");
  struct Options {
    std::string file, shard;
    std::optional<uint64_t> jobs;
    bool merge = false;
    Progress progress;
  };
  auto o = std::make_shared<Options>();
  sub->add_option("SWEEP", o->file, "the sweep file (configs/sweeps/*.json)")
      ->required()
      ->type_name("");
  add_count(*sub, "--jobs", o->jobs, "threads to run points on (default: all cores)");
  sub->add_option("--shard", o->shard,
                  "run shard I of N (I from 0): the points whose index modulo N is I; default "
                  "in a Slurm job array: SLURM_ARRAY_TASK_ID (less SLURM_ARRAY_TASK_MIN) of "
                  "SLURM_ARRAY_TASK_COUNT")
      ->type_name("I/N");
  sub->add_flag("--merge", o->merge,
                "write the tables from the points the shards finished; say which are missing");
  add_progress(*sub, o->progress);
  sub->callback([o] {
    const sweep::Sweep s = sweep::load_sweep(o->file);
    if (o->merge) {
      if (!o->shard.empty()) throw UsageError("--merge takes no --shard: it reads every shard's");
      sweep::merge_sweep(s);
      std::cerr << "sweep " << s.name << ": " << s.points.size() << " points merged; tables in "
                << s.out_dir << "\n";
      return;
    }
    sweep::RunOptions options;
    if (o->jobs) options.jobs = static_cast<unsigned>(*o->jobs);
    options.progress = o->progress.wanted();
    if (!o->shard.empty())
      options.shard = parse_shard(o->shard, "--shard");
    else if (const std::optional<sweep::Shard> slurm = slurm_shard())
      options.shard = *slurm;
    const sweep::Outcome done = sweep::run_sweep(s, options);
    std::cerr << "sweep " << s.name << ": ";
    if (options.shard.count > 1)
      std::cerr << "shard " << options.shard.index << "/" << options.shard.count << ", ";
    std::cerr << s.points.size() << " points (" << done.ran << " run, " << done.reused
              << " already done); "
              << (done.tables ? "tables in " + s.out_dir
                              : "tables once every shard is done: faultline sweep --merge")
              << "\n";
  });
}

} // namespace faultline::cli
