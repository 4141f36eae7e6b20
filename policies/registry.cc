#include "policies/registry.h"

#include "sim/core/error.h"

namespace faultline::policies {

Registry& Registry::instance() {
  static Registry registry;
  static const bool handed_in = (config::set_policy_names(&registry), true);
  (void)handed_in;
  return registry;
}

bool Registry::add(const std::string& name, Factory factory) {
  if (!factories_.emplace(name, std::move(factory)).second) {
    throw Error("policy \"" + name + "\" is registered twice");
  }
  return true;
}

std::string Registry::known() const {
  std::string out;
  for (const auto& [name, factory] : factories_) out += (out.empty() ? "" : ", ") + name;
  return out;
}

std::vector<std::string> Registry::names() const {
  std::vector<std::string> out;
  for (const auto& entry : factories_) out.push_back(entry.first);
  return out;
}

std::unique_ptr<IPolicy> Registry::create(const std::string& name, const nlohmann::json& params,
                                          const std::string& where) const {
  auto it = factories_.find(name);
  if (it == factories_.end()) {
    throw ConfigError(where + ": unknown policy \"" + name + "\"; known policies: " + known());
  }
  return it->second(params, where);
}

} // namespace faultline::policies
