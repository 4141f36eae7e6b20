// A run config file (configs/runs/) as `faultline sim` reads it: the config with its profiles
// and topology, the policy it names with its parameters, and the machine built from it.
#include "fuzz_support.h"
#include "policies/registry.h"
#include "sim/config/run_config.h"
#include "sim/topology/topology.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::InputFile file("run.json");
  const std::string& path = file.write(fuzz::view(data, size));
  fuzz::accept_errors([&] {
    const faultline::config::RunConfig c = faultline::config::load_run_config(path);
    faultline::policies::Registry::instance().create(c.policy, c.policy_params, path);
    faultline::Topology(faultline::config::machine_topology(c)).describe();
  });
  return 0;
}
