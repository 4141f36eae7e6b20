// `faultline trace dump|stats`: inspect a trace (sim/trace/inspect.h does the work).
#include "sim/cli/app.h"
#include "sim/cli/commands.h"
#include "sim/trace/inspect.h"

#include <iostream>
#include <memory>

namespace faultline::cli {

void add_trace(CLI::App& app) {
  CLI::App* trace = add_command(
      app, "trace", "print a trace as JSON lines (dump) or its statistics (stats)",
      "dump: one JSON object per line: the header, then each record.\n"
      "stats: footprint, kernels, accesses, distinct 2 MB blocks, reuse, training steps and\n"
      "each step's records.");
  trace->require_subcommand(1);
  auto path = std::make_shared<std::string>();
  CLI::App* dump = add_command(*trace, "dump", "the header, then each record, as JSON lines", "");
  dump->add_option("T", *path, "the trace")->required()->type_name("");
  dump->callback([path] { trace::dump(*path, std::cout); });
  CLI::App* stats = add_command(
      *trace, "stats",
      "footprint, kernels, accesses, distinct 2 MB blocks, reuse, training steps and each "
      "step's records, as JSON",
      "");
  stats->add_option("T", *path, "the trace")->required()->type_name("");
  stats->callback([path] { std::cout << trace::compute_stats(*path).to_json().dump(2) << "\n"; });
}

} // namespace faultline::cli
