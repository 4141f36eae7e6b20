// `faultline replay --config`: the run config `faultline sim` takes drives the live replay's
// request, and options on the command line override it. No GPU is touched.
#include "sim/cli/commands.h"
#include "test_support.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using namespace faultline;

namespace {

live::ReplayRequest request_of(const std::vector<std::string>& args) {
  return cli::replay_request(args);
}

} // namespace

TEST_CASE("replay --config takes policy, params, budget and iterations from a run config",
          "[live]") {
  fltest::TempDir dir;
  const std::string config = dir.file("run.json");
  fltest::write_text(config, R"({"gpu": "h200", "capacity": {"fraction_of_footprint": 0.6,
    "mode": "budget"}, "policy": {"name": "deepum", "params": {"discard_freed": false}},
    "iterations": 6})");
  const live::ReplayRequest request = request_of({"--config", config, "--trace", "t.fltrace"});
  CHECK(request.trace_path == "t.fltrace");
  CHECK(request.policy == "deepum");
  CHECK(request.policy_params == nlohmann::json{{"discard_freed", false}});
  CHECK(request.budget_fraction == 0.6);
  CHECK(request.budget_bytes == 0);
  CHECK(request.iterations == 6);

  SECTION("options override it, wherever they stand") {
    const live::ReplayRequest o =
        request_of({"--budget", "2G", "--config", config, "--iterations", "2", "--trace", "t"});
    CHECK(o.budget_bytes == 2ull << 30);
    CHECK(o.iterations == 2);
    CHECK(o.policy == "deepum");
  }
  SECTION("another policy drops the config's params") {
    const live::ReplayRequest o =
        request_of({"--config", config, "--policy", "pump", "--trace", "t"});
    CHECK(o.policy == "pump");
    CHECK(o.policy_params == nlohmann::json::object());
  }
}
