// The names a run config's "policy" may take. The policies sit above the config layer (they read
// their parameters with its Reader), so the config layer cannot ask their registry itself; the
// registry hands itself in when it is made (policies/registry.cc).
#pragma once

#include <string>

namespace faultline::config {

class PolicyNames {
public:
  virtual ~PolicyNames() = default;
  virtual bool has(const std::string& name) const = 0;
  virtual std::string known() const = 0; // comma-separated, for messages
};

void set_policy_names(const PolicyNames* names);
// The registry handed in; Error if none was (a build without the policies cannot read run
// configs).
const PolicyNames& policy_names();

} // namespace faultline::config
