// A GPU profile (configs/gpus/) and a link profile (configs/links/), each as a run config names
// it by path: the same bytes are read as both kinds, since a user may hand either.
#include "fuzz_support.h"
#include "sim/config/run_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::InputFile file("profile.json");
  const nlohmann::json spec = file.write(fuzz::view(data, size));
  nlohmann::json resolved;
  fuzz::accept_errors(
      [&] { faultline::config::load_gpu_profile(spec, "run.json", "$.gpu", resolved); });
  fuzz::accept_errors([&] {
    const auto link =
        faultline::config::load_link_profile(spec, "run.json", "$.host_link", resolved);
    // What the simulator asks of a link: a transfer's time at sizes across the curve's range.
    for (faultline::Bytes bytes = 1; bytes; bytes <<= 4) {
      link.forward.transfer_ns(bytes);
      link.reverse.transfer_ns(bytes);
    }
  });
  return 0;
}
