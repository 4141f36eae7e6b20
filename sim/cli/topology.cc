// `faultline topology`: the routes of a machine topology (sim/topology/topology.h).
#include "sim/topology/topology.h"

#include "sim/cli/app.h"
#include "sim/cli/commands.h"
#include "sim/config/run_config.h"

#include <iostream>
#include <memory>

namespace faultline::cli {

void add_topology(CLI::App& app) {
  CLI::App* sub = add_command(
      app, "topology", "print the routes of a machine topology (a preset name or a JSON file)",
      "Reads a topology (configs/topologies/NAME.json or FILE) and prints, for every pair of\n"
      "processors, the route the simulator uses (widest path, no third GPU) and its bandwidth.");
  auto name = std::make_shared<std::string>();
  sub->add_option("TOPOLOGY", *name, "a preset name (configs/topologies/NAME.json) or a file")
      ->required()
      ->type_name("");
  sub->callback([name] {
    // A run config around the topology, so that it is read and checked as `sim` reads it.
    const nlohmann::json doc = {{"topology", *name},
                                {"capacity", {{"fraction_of_footprint", 1.0}}},
                                {"policy", {{"name", "ondemand"}}}};
    const config::RunConfig c = config::parse_run_config(doc, "faultline topology");
    std::cout << Topology(config::machine_topology(c)).describe();
  });
}

} // namespace faultline::cli
