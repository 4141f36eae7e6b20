// ondemand: the NVIDIA driver's own behaviour and nothing more. The driver model in sim/uvm/
// already services faults with its density prefetcher and evicts in FIFO order, so this policy
// adds no action; it is the baseline every other policy is compared with.
#include "policies/registry.h"
#include "sim/config/reader.h"

namespace faultline::policies {
namespace {

class OnDemand : public IPolicy {
public:
  OnDemand(const nlohmann::json& params, const std::string& where) {
    config::Reader(params, where, "$.policy.params").finish(); // takes no parameters
  }
};

} // namespace

FAULTLINE_REGISTER_POLICY(OnDemand, "ondemand");

} // namespace faultline::policies
