// Policies by name. Each policy folder registers itself with FAULTLINE_REGISTER_POLICY; a test
// checks that every folder under policies/ is registered, so a forgotten one cannot go unseen.
#pragma once

#include "policies/policy.h"
#include "sim/config/policy_names.h"

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace faultline::policies {

// The registry is also the run config's list of policy names (sim/config/policy_names.h).
class Registry : public config::PolicyNames {
public:
  // `params` is the run config's policy.params; `where` names it for error messages
  // (file and JSON path). A factory reads params strictly (config::Reader).
  using Factory = std::function<std::unique_ptr<IPolicy>(const nlohmann::json& params,
                                                         const std::string& where)>;

  static Registry& instance();
  bool add(const std::string& name, Factory factory);
  bool has(const std::string& name) const override { return factories_.count(name) != 0; }
  // Comma-separated known names, for messages.
  std::string known() const override;
  std::vector<std::string> names() const; // in name order
  std::unique_ptr<IPolicy> create(const std::string& name, const nlohmann::json& params,
                                  const std::string& where) const;

private:
  std::map<std::string, Factory> factories_;
};

} // namespace faultline::policies

#define FAULTLINE_REGISTER_POLICY(Class, name)                                                     \
  static const bool faultline_registered_##Class =                                                 \
      ::faultline::policies::Registry::instance().add(                                             \
          name,                                                                                    \
          [](const nlohmann::json& params,                                                         \
             const std::string& where) -> std::unique_ptr<::faultline::policies::IPolicy> {        \
            return std::make_unique<Class>(params, where);                                         \
          })
