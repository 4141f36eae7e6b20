// `faultline sweep`: a grid of simulations in parallel (sim/sweep/sweep.h does the work).
#include "sim/sweep/sweep.h"

#include "sim/cli/app.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"

#include <iostream>
#include <memory>

namespace faultline::cli {

void add_sweep(CLI::App& app) {
  CLI::App* sub = add_command(
      app, "sweep", "run a grid of simulations in parallel into one results table",
      "Expands the sweep's grid (traces x policies x capacity fractions x varied config values),\n"
      "runs the points not already finished on N threads (default: all cores) and writes\n"
      "OUT/points/NNNN.json per point and OUT/results.csv and OUT/results.json for all.\n"
      "An interrupted sweep resumes where it stopped. The sweep file format is in\n"
      "experiments/README.md.");
  struct Options {
    std::string file;
    std::optional<uint64_t> jobs;
    Progress progress;
  };
  auto o = std::make_shared<Options>();
  sub->add_option("SWEEP", o->file, "the sweep file (configs/sweeps/*.json)")
      ->required()
      ->type_name("");
  add_count(*sub, "--jobs", o->jobs, "threads to run points on (default: all cores)");
  add_progress(*sub, o->progress);
  sub->callback([o] {
    sweep::RunOptions options;
    if (o->jobs) options.jobs = static_cast<unsigned>(*o->jobs);
    options.progress = o->progress.wanted();
    const sweep::Sweep s = sweep::load_sweep(o->file);
    const sweep::Outcome done = sweep::run_sweep(s, options);
    std::cerr << "sweep " << s.name << ": " << s.points.size() << " points (" << done.ran
              << " run, " << done.reused << " already done); tables in " << s.out_dir << "\n";
  });
}

} // namespace faultline::cli
