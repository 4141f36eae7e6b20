// Running a trace for N training steps: `faultline sim --iterations N` (and the config's
// "iterations") on synthetic DNN traces, the per-step result rows, the live replay's rows.
#include "fake_device.h"
#include "sim/live/replay.h"
#include "sim/run/results.h"
#include "sim/synth/synth.h"
#include "sim_fixture.h"

#include <catch2/catch.hpp>

using namespace faultline;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

std::string dnn_trace(const simtest::Scratch& s, uint32_t iterations,
                      const std::string& name = "dnn.fltrace") {
  synth::Params p;
  p.footprint = 64 << 20;
  p.iterations = iterations;
  p.layers = 4;
  synth::write_trace(p, s.file(name), "test");
  return s.file(name);
}

json run(const simtest::Scratch& s, const std::string& trace, uint64_t iterations,
         json config = simtest::Scratch::run_config()) {
  SimRequest request;
  request.config_path = "test config";
  request.config_doc = std::move(config);
  request.trace_path = trace;
  request.iterations = iterations;
  return run_sim(request);
}

// Every counter of the rows adds up to the run's total; the rows tile the run's time.
void check_rows_sum(const json& out) {
  const json& rows = out["steps"];
  const json& total = out["results"];
  REQUIRE_FALSE(rows.empty());
  CHECK(rows[0]["start_ns"] == 0);
  CHECK(rows.back()["end_ns"] == total["total_time_ns"]);
  for (size_t i = 1; i < rows.size(); ++i) CHECK(rows[i]["start_ns"] == rows[i - 1]["end_ns"]);
  const std::vector<std::pair<std::string, json>> fields = {
      {"time_ns", total["total_time_ns"]},
      {"compute_ns", total["compute_ns"]},
      {"fault_stall_ns", total["fault_stall_ns"]},
      {"host_fault_ns", total["host_fault_ns"]},
      {"kernels", total["kernels"]},
      {"accesses", total["accesses"]},
      {"faults", total["faults"]},
      {"batches", total["batches"]},
      {"bytes_host_to_gpu", total["bytes_host_to_gpu"]},
      {"bytes_gpu_to_host", total["bytes_gpu_to_host"]},
      {"evictions", total["evictions"]},
      {"prefetch_issued_bytes", total["prefetch"]["issued_bytes"]},
      {"prefetch_used_bytes", total["prefetch"]["used_bytes"]}};
  for (const auto& [field, expected] : fields) {
    int64_t sum = 0;
    for (const json& r : rows) sum += r[field].get<int64_t>();
    INFO(field);
    CHECK(sum == expected.get<int64_t>());
  }
}

} // namespace

TEST_CASE("iterations: N steps of an equal step take N times one step's simulated time",
          "[steps][sim]") {
  simtest::Scratch s;
  const std::string trace = dnn_trace(s, 2);
  const json two = run(s, trace, 0); // the trace's own two steps
  const json ten = run(s, trace, 10);
  CHECK(two["iterations"]["used"] == 2);
  CHECK(two["iterations"]["repetitions"] == 0);
  CHECK(ten["iterations"]["used"] == 10);
  CHECK(ten["iterations"]["repetitions"] == 8);
  CHECK(ten["config"]["iterations"] == 10);
  CHECK_FALSE(two["config"].contains("iterations")); // recorded only when given
  REQUIRE(two["steps"].size() == 3);                 // set-up, steps 0 and 1
  REQUIRE(ten["steps"].size() == 11);
  // At 100% capacity every step after the first is alike: activations fault in afresh, weights
  // stay. Step 0 also brings the weights in.
  const double step = two["steps"][2]["time_ns"].get<double>();
  for (size_t i = 2; i < 11; ++i) {
    INFO("step " << i - 1);
    CHECK(ten["steps"][i]["step"] == i - 1);
    CHECK(ten["steps"][i]["time_ns"].get<double>() == Approx(step).epsilon(0.05));
    CHECK(ten["steps"][i]["faults"] == two["steps"][2]["faults"]);
  }
  const double repeated =
      ten["results"]["total_time_ns"].get<double>() - two["results"]["total_time_ns"].get<double>();
  CHECK(repeated == Approx(8 * step).epsilon(0.05));
  CHECK(ten["results"]["kernels"].get<uint64_t>() == 5 * two["results"]["kernels"].get<uint64_t>());
  check_rows_sum(two);
  check_rows_sum(ten);

  // A one-step trace repeats whole (set-up aside) with the same result per step.
  const json one = run(s, dnn_trace(s, 1, "one.fltrace"), 10);
  CHECK(one["iterations"]["repetitions"] == 9);
  CHECK(one["results"]["total_time_ns"].get<double>() ==
        Approx(ten["results"]["total_time_ns"].get<double>()).epsilon(0.05));
  check_rows_sum(one);
}

TEST_CASE("iterations: fewer than the trace's steps run its first ones", "[steps][sim]") {
  simtest::Scratch s;
  const std::string trace = dnn_trace(s, 3);
  const json first = run(s, trace, 1);
  const json all = run(s, trace, 3);
  REQUIRE(first["steps"].size() == 2);
  CHECK(first["steps"][1] == all["steps"][1]); // step 0 alike
  CHECK(first["results"]["kernels"] == 12);
  check_rows_sum(first);
}

TEST_CASE("iterations: rows add up under eviction and a learning policy, and the same bytes twice",
          "[steps][sim]") {
  simtest::Scratch s;
  const std::string trace = dnn_trace(s, 2);
  for (const char* policy : {"ondemand", "deepum", "oracle"}) {
    INFO(policy);
    json config = simtest::Scratch::run_config(json::object(), policy);
    config["capacity"]["fraction_of_footprint"] = 0.5;
    config["iterations"] = 6; // the config's key, not the override
    const json a = run(s, trace, 0, config);
    CHECK(a["iterations"]["used"] == 6);
    CHECK(a["results"]["evictions"].get<uint64_t>() +
              a["results"]["policy_evicted_bytes"].get<uint64_t>() >
          0);
    check_rows_sum(a);
    CHECK(run(s, trace, 0, config).dump() == a.dump());
  }
}

TEST_CASE("iterations: the config key is an integer of at least 1", "[steps][config]") {
  simtest::Scratch s;
  for (const json& bad : {json(0), json(-1), json(1.5), json("3"), json(2000000)}) {
    json config = simtest::Scratch::run_config();
    config["iterations"] = bad;
    INFO(bad.dump());
    CHECK_THROWS_WITH(simtest::parse(config), Contains("test config") && Contains("$.iterations"));
  }
}

TEST_CASE("iterations: the live replay runs the same records, a row per step", "[steps][live]") {
  simtest::Scratch s;
  const std::string trace = dnn_trace(s, 2);
  fltest::FakeDevice device;
  live::ReplayRequest request;
  request.trace_path = trace;
  request.margin = 0;
  request.iterations = 5;
  const json out = live::run_replay(request, device);
  CHECK(out["iterations"]["used"] == 5);
  CHECK(out["config"]["iterations"] == 5);
  const json& rows = out["steps"];
  REQUIRE(rows.size() == 6); // set-up and five steps
  uint64_t kernels = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    CHECK(rows[i]["step"] == static_cast<int64_t>(i) - 1);
    kernels += rows[i]["kernels"].get<uint64_t>();
    if (i > 0) CHECK(rows[i]["start_ns"] == rows[i - 1]["end_ns"]);
  }
  CHECK(kernels == out["results"]["kernels"]);
  CHECK(kernels == 5 * 12);
  CHECK(rows.back()["end_ns"] == out["results"]["total_time_ns"]);
  CHECK(device.kernel_pages.size() == 5 * 12);
}
