// `faultline config schema`: every declared config key (sim/config/schema.h does the work).
#include "sim/cli/app.h"
#include "sim/cli/commands.h"
#include "sim/config/schema.h"

#include <iostream>
#include <memory>

namespace faultline::cli {

void add_config(CLI::App& app) {
  CLI::App* config = add_command(
      app, "config", "'config schema': every config key, its type, default, bounds and meaning",
      "schema: the tables that configs/README.md and each policy's README hold (a test keeps\n"
      "them equal; tests/doc_tables.sh --write regenerates them).");
  config->require_subcommand(1);
  CLI::App* schema = add_command(
      *config, "schema", "every config key: type, unit, default, allowed values, meaning",
      "Prints one table per section (run config, driver, GPU and link profiles, each policy's\n"
      "params, allocator and synth options, sweeps), or SECTION's alone.");
  struct Options {
    std::string format = "markdown", section;
  };
  auto o = std::make_shared<Options>();
  schema->add_option("--format", o->format, "markdown (default) or json")->type_name("F");
  schema->add_option("SECTION", o->section, "one section, e.g. run.driver or policy.deepum");
  schema->callback([o] { config::print_schema(std::cout, o->format, o->section); });
}

} // namespace faultline::cli
