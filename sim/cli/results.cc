// `faultline results fields`: the declared result fields (sim/run/result_fields.h).
#include "sim/cli/app.h"
#include "sim/cli/commands.h"
#include "sim/run/result_fields.h"

#include <iostream>

namespace faultline::cli {

void add_results(CLI::App& app) {
  CLI::App* results = add_command(
      app, "results", "'results fields': every field a result document holds, its unit and meaning",
      "fields: the Markdown table of sim/README.md (a test keeps the two equal).");
  results->require_subcommand(1);
  add_command(*results, "fields", "every result field, its unit, meaning and backend", "")
      ->callback([] { std::cout << result_fields_markdown(); });
}

} // namespace faultline::cli
