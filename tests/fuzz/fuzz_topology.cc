// A machine topology file (configs/topologies/) as `faultline topology FILE` reads it: inside a
// run config, so that it is checked as `sim` checks it, then every route between processors.
#include "fuzz_support.h"
#include "sim/config/run_config.h"
#include "sim/topology/topology.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::InputFile file("topology.json");
  const std::string& path = file.write(fuzz::view(data, size));
  fuzz::accept_errors([&] {
    const nlohmann::json doc = {{"topology", path},
                                {"capacity", {{"fraction_of_footprint", 1.0}}},
                                {"policy", {{"name", "ondemand"}}}};
    const auto c = faultline::config::parse_run_config(doc, "faultline topology");
    faultline::Topology(faultline::config::machine_topology(c)).describe();
  });
  return 0;
}
