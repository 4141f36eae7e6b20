// Profile files (configs/gpus, configs/links, configs/topologies) as a run config names them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace faultline::config {

struct ProfileDoc {
  nlohmann::json doc;
  std::string label; // for messages: which file(s) the values came from
};

// Resolves `spec` (at JSON `path` of `file`) to the profile's document with its overrides
// merged in: a name ("h200": configs/KIND/h200.json), a path relative to `file`, or an object
// {"profile": NAME, key: value...}. An override of a key the profile lacks is an error.
ProfileDoc resolve_profile(const std::string& kind, const nlohmann::json& spec,
                           const std::string& file, const std::string& path);

} // namespace faultline::config
