// The driver's prefetch queue behind faults (driver.prefetch_queue, sim/uvm/prefetch_queue.h) as
// DeepUM's prefetch-only step runs it, on a synthetic sliding window: one kernel, one execution
// ID, each launch reading the next slice of one array.
#include "sim/run/results.h"
#include "sim/synth/synth.h"
#include "sim_fixture.h"

#include <catch2/catch.hpp>

using namespace faultline;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

std::string window_trace(const simtest::Scratch& s) {
  synth::Params p;
  p.pattern = "window";
  p.footprint = 64 << 20;
  p.iterations = 3;
  p.kernels_per_iteration = 16;
  p.ns_per_access = 100000; // compute that a prefetch can hide behind (the link: 1 GB/s)
  synth::write_trace(p, s.file("window.fltrace"), "test");
  return s.file("window.fltrace");
}

json run(const std::string& trace, const json& driver, const std::string& policy,
         const json& params = json::object()) {
  json config = simtest::Scratch::run_config(driver, policy);
  config["capacity"] = {{"fraction_of_footprint", 0.5}};
  config["policy"]["params"] = params;
  SimRequest request;
  request.config_path = "test config";
  request.config_doc = std::move(config);
  request.trace_path = trace;
  return run_sim(request);
}

const json kPrefetchOnly = {{"pre_evict", false}, {"discard_freed", false}};

} // namespace

TEST_CASE("prefetch queue: DeepUM's prefetching alone learns a moving window and gains",
          "[sim][deepum]") {
  simtest::Scratch s;
  const std::string trace = window_trace(s);
  const json um = run(trace, json::object(), "ondemand");
  const json deepum = run(trace, json::object(), "deepum", kPrefetchOnly);
  // The first step trains the tables; by the last, the chain runs ahead of the window.
  const json& um_last = um["steps"].back();
  const json& last = deepum["steps"].back();
  CHECK(last["faults"].get<int64_t>() * 2 < um_last["faults"].get<int64_t>());
  CHECK(last["time_ns"] < um_last["time_ns"]);
  CHECK(deepum["results"]["prefetch"]["used_bytes"] > 0);
}

TEST_CASE("prefetch queue: run at once, prefetches into a full GPU evict what they fetched",
          "[sim][deepum]") {
  simtest::Scratch s;
  const std::string trace = window_trace(s);
  const json queued = run(trace, {{"prefetch_queue", "behind_faults"}}, "deepum", kPrefetchOnly);
  const json by_policy = run(trace, json::object(), "deepum", kPrefetchOnly);
  const json at_once = run(trace, {{"prefetch_queue", "immediate"}}, "deepum", kPrefetchOnly);
  CHECK(by_policy["results"] == queued["results"]); // deepum's own system queues them
  const auto wasted = [](const json& r) {
    return r["results"]["prefetch"]["wasted_bytes"].get<int64_t>();
  };
  // At once, each chain's evictions land before the running kernel is done with its data.
  CHECK(wasted(at_once) > 4 * std::max<int64_t>(wasted(queued), 1));
  CHECK(at_once["results"]["total_time_ns"] > queued["results"]["total_time_ns"]);
}

TEST_CASE("prefetch queue: only in the driver's capacity mode", "[sim][config]") {
  simtest::Scratch s;
  json config = simtest::Scratch::run_config({{"prefetch_queue", "behind_faults"}});
  config["capacity"]["mode"] = "budget";
  CHECK_THROWS_WITH(simtest::parse(config), Contains("prefetch_queue") && Contains("budget"));
  config["driver"]["prefetch_queue"] = "later";
  CHECK_THROWS_WITH(simtest::parse(config), Contains("behind_faults") && Contains("later"));
}
