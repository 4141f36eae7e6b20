// ondemand: the NVIDIA driver's own behaviour and nothing more. The driver model in sim/uvm/
// already services faults with its density prefetcher and evicts in FIFO order, so this policy
// adds no action; it is the baseline every other policy is compared with.
#include "policies/registry.h"
#include "sim/config/schema.h"

namespace faultline::policies {
namespace {

struct NoParams {};

const config::Fields<NoParams>& fields() {
  static const config::Fields<NoParams> none;
  return none;
}
FAULTLINE_REGISTER_SCHEMA("policy.ondemand", "`policy.params` of policy ondemand", fields);

class OnDemand : public IPolicy {
public:
  OnDemand(const nlohmann::json& params, const std::string& where) {
    config::read_object(params, where, "$.policy.params", fields()); // takes no parameters
  }
};

} // namespace

FAULTLINE_REGISTER_POLICY(OnDemand, "ondemand");

} // namespace faultline::policies
