#include "sim/program/config.h"

#include "sim/config/policy_names.h"
#include "sim/config/reader.h"

namespace faultline::program {

nlohmann::json to_json(const RunConfig& c) {
  return {{"policy", c.policy},
          {"params", c.params},
          {"budget_bytes", c.budget_bytes},
          {"trace", c.trace},
          {"iterations", c.iterations},
          {"range", c.range},
          {"kernel_ends", c.kernel_ends},
          {"out", c.out}};
}

RunConfig run_config_of(const nlohmann::json& doc, const std::string& where) {
  if (!doc.is_object())
    throw ConfigError(where + ": $: expected an object, got " + config::type_name(doc));
  config::Reader r(doc, where);
  RunConfig c;
  c.policy = r.get<std::string>("policy");
  if (!config::policy_names().has(c.policy))
    r.fail("policy", "unknown policy \"" + c.policy +
                         "\"; known policies: " + config::policy_names().known());
  c.params = r.raw("params", nlohmann::json::object());
  if (!c.params.is_object())
    r.fail("params", std::string("expected an object, got ") + config::type_name(c.params));
  c.budget_bytes = r.get<uint64_t>("budget_bytes", 0);
  c.trace = r.get<std::string>("trace", "");
  c.iterations = r.get<uint64_t>("iterations", 0);
  c.range = r.get<std::string>("range", "all");
  if (c.range != "all" && c.range != "profiler")
    r.fail("range", "expected \"all\" or \"profiler\", got \"" + c.range + "\"");
  c.kernel_ends = r.get<std::string>("kernel_ends", "launch");
  if (c.kernel_ends != "launch" && c.kernel_ends != "gpu")
    r.fail("kernel_ends", "expected \"launch\" or \"gpu\", got \"" + c.kernel_ends + "\"");
  c.out = r.get<std::string>("out");
  r.finish();
  return c;
}

} // namespace faultline::program
