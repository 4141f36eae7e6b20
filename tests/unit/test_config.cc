// Run configs resolved from profiles, their errors, and link curves (the Reader itself:
// test_config_reader.cc).
#include "sim/config/reader.h"
#include "sim/config/run_config.h"
#include "sim/core/error.h"
#include "test_support.h"

#include <catch2/catch.hpp>
#include <string>

using namespace faultline;
using namespace faultline::config;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

// The test profile as a run config resolves it: the optional costs filled in with 0, the peer
// costs with the host path's.
json resolved_test_gpu() {
  json gpu = fltest::test_gpu_profile();
  for (const char* key :
       {"populate_ns", "fault_migrate_ns", "prefetch_call_ns", "prefetch_populate_ns",
        "prefetch_copy_extra_ns", "swap_extra_ns", "launch_ns", "host_populate_ns",
        "eviction_run_ns", "eviction_page_ns", "eviction_populate_ns"})
    gpu[key] = 0;
  gpu["peer_eviction_ns"] = gpu["eviction_ns"];
  gpu["peer_fault_migrate_ns"] = gpu["fault_migrate_ns"];
  gpu["discarded_resident_fault_ns"] = gpu["populate_ns"];
  gpu["discarded_fault_ns"] = gpu["populate_ns"];
  gpu["discarded_prefetch_ns"] = gpu["prefetch_populate_ns"];
  gpu["eviction_discarded_ns"] = gpu["eviction_populate_ns"];
  return gpu;
}

// The ConfigError message parsing `doc` gives; fails the test if it parses.
std::string config_error(const json& doc) {
  try {
    parse_run_config(doc, "test.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  FAIL("parsing " << doc.dump() << " did not throw ConfigError");
  return "";
}

// A valid run config with `patch` merged in (RFC 7386: null removes a key).
json config_with(const json& patch) {
  json doc = fltest::test_run_config();
  doc.merge_patch(patch);
  return doc;
}

} // namespace

TEST_CASE("config: a valid run config resolves its profiles", "[config]") {
  fltest::TempDir dir;
  fltest::write_test_profiles(dir.path());
  CHECK(configs_dir() == dir.path().string());

  RunConfig c = parse_run_config(fltest::test_run_config(), "test.json");
  CHECK(c.gpu.name == "testgpu");
  CHECK(c.gpu.memory_bytes == uint64_t{1} << 30);
  CHECK(c.gpu.host_link == "testlink");
  CHECK(c.gpu.batch_fixed_ns == 10000);
  CHECK(c.gpu.per_vablock_ns == 2000);
  CHECK(c.gpu.per_fault_ns == 100);
  CHECK(c.gpu.page_table_update_ns == 1000);
  CHECK(c.gpu.eviction_ns == 5000);
  CHECK(c.gpu.host_fault_ns == 3000);
  CHECK(c.gpu.fault_parallelism == 64);
  CHECK(c.host_link.name == "testlink");
  CHECK(c.host_link.kind == "pcie");
  CHECK(c.host_link.forward.overhead_ns == 1000);
  REQUIRE(c.host_link.forward.points.size() == 3);
  CHECK(c.host_link.forward.points[1] == std::pair<Bytes, double>{65536, 16.0});
  CHECK(c.host_link.reverse.points[2] == std::pair<Bytes, double>{2097152, 16.0});
  CHECK(c.peer_link.name == "testlink");
  CHECK(c.gpus == 1);
  CHECK(c.capacity.bytes == 0);
  CHECK(c.capacity.fraction == 1.0);
  CHECK(c.policy == "ondemand");
  CHECK(c.policy_params == json::object());
  CHECK(c.driver.batch_size == 256);
  CHECK(c.driver.prefetch);
  CHECK(c.driver.eviction == EvictionOrder::kFifo);
  CHECK_FALSE(c.per_kernel);

  // The resolved config holds the whole profiles, the capacity and every default.
  CHECK(c.resolved["gpu"] == resolved_test_gpu());
  CHECK(c.resolved["host_link"] == fltest::test_link_profile());
  CHECK(c.resolved["peer_link"] == fltest::test_link_profile());
  CHECK(c.resolved["capacity"] == json{{"fraction_of_footprint", 1.0}, {"mode", "driver"}});
  CHECK(c.capacity_mode == RunConfig::CapacityMode::kDriver);
  CHECK(c.resolved["policy"] == json{{"name", "ondemand"}, {"params", json::object()}});
  CHECK(c.resolved["driver"]["batch_size"] == 256);
  CHECK(c.resolved["driver"]["eviction"] == "fifo");
  CHECK(c.resolved["driver"]["thrashing_pin_ns"] == 150000000);
  CHECK(c.resolved["gpus"] == 1);
  CHECK(c.resolved["watchdog_ns"] == 60'000'000'000);
  CHECK(c.resolved["description"] == "unit test");

  SECTION("capacity in bytes, driver settings and a policy") {
    RunConfig d = parse_run_config(
        config_with({{"capacity", {{"fraction_of_footprint", nullptr}, {"bytes", 64 << 20}}},
                     {"driver", {{"batch_size", 32}, {"eviction", "lru"}, {"prefetch", false}}},
                     {"per_kernel", true}}),
        "test.json");
    CHECK(d.capacity.bytes == 64 << 20);
    CHECK(d.capacity.fraction == 0);
    CHECK(d.resolved["capacity"] == json{{"bytes", 64 << 20}, {"mode", "driver"}});
    CHECK(d.driver.batch_size == 32);
    CHECK(d.driver.eviction == EvictionOrder::kLru);
    CHECK_FALSE(d.driver.prefetch);
    CHECK(d.per_kernel);
    CHECK(d.resolved["driver"]["prefetch_threshold"] == 51);
  }
  SECTION("profiles given by path, relative to the config file") {
    fltest::write_json(dir.path() / "runs" / "mygpu.json", fltest::test_gpu_profile());
    RunConfig d = parse_run_config(config_with({{"gpu", "mygpu.json"}}),
                                   (dir.path() / "runs" / "run.json").string());
    CHECK(d.gpu.name == "testgpu");
  }
  SECTION("load_run_config reads a file") {
    const std::string path = dir.file("run.json");
    fltest::write_json(path, fltest::test_run_config());
    CHECK(load_run_config(path).gpu.name == "testgpu");
    fltest::write_json(path, config_with({{"typo", 1}}));
    CHECK_THROWS_WITH(load_run_config(path), Contains(path) && Contains("$.typo"));
  }
}

TEST_CASE("config: profile overrides", "[config]") {
  fltest::TempDir dir;
  fltest::write_test_profiles(dir.path());

  SECTION("an override replaces one value") {
    RunConfig c = parse_run_config(
        config_with({{"gpu", {{"profile", "testgpu"}, {"batch_fixed_ns", 123}}}}), "test.json");
    CHECK(c.gpu.batch_fixed_ns == 123);
    CHECK(c.gpu.per_vablock_ns == 2000);
    json want = resolved_test_gpu();
    want["batch_fixed_ns"] = 123;
    CHECK(c.resolved["gpu"] == want);
  }
  SECTION("a nested link override") {
    RunConfig c = parse_run_config(
        config_with({{"host_link", {{"profile", "testlink"}, {"forward", {{"overhead_ns", 7}}}}}}),
        "test.json");
    CHECK(c.host_link.forward.overhead_ns == 7);
    CHECK(c.host_link.forward.points.size() == 3);
    CHECK(c.peer_link.forward.overhead_ns == 1000);
  }
  SECTION("an override of a key the profile lacks") {
    const std::string msg =
        config_error(config_with({{"gpu", {{"profile", "testgpu"}, {"batch_ns", 1}}}}));
    CHECK_THAT(msg,
               Contains("test.json") && Contains("$.gpu.batch_ns") && Contains("batch_fixed_ns"));
  }
  SECTION("a nested override of a key the profile lacks") {
    const std::string msg = config_error(
        config_with({{"host_link", {{"profile", "testlink"}, {"forward", {{"latency", 7}}}}}}));
    CHECK_THAT(msg, Contains("$.host_link.forward.latency") && Contains("overhead_ns"));
  }
  SECTION("an override of the wrong type") {
    const std::string msg =
        config_error(config_with({{"gpu", {{"profile", "testgpu"}, {"batch_fixed_ns", "fast"}}}}));
    CHECK_THAT(msg, Contains("testgpu.json with overrides from test.json") &&
                        Contains("$.gpu.batch_fixed_ns") &&
                        Contains("expected integer, got string"));
  }
  SECTION("a negative cost") {
    const std::string msg =
        config_error(config_with({{"gpu", {{"profile", "testgpu"}, {"eviction_ns", -1}}}}));
    CHECK_THAT(msg, Contains("$.gpu.eviction_ns") && Contains("expected at least 0, got -1"));
  }
  SECTION("a gpu spec that is neither a name nor an object with a profile") {
    CHECK_THAT(config_error(config_with({{"gpu", 5}})),
               Contains("$.gpu") && Contains("expected a profile name"));
    CHECK_THAT(config_error(config_with({{"gpu", {{"batch_fixed_ns", 5}}}})),
               Contains("$.gpu") && Contains("expected a profile name"));
  }
}

TEST_CASE("config: run config errors", "[config]") {
  fltest::TempDir dir;
  fltest::write_test_profiles(dir.path());
  fltest::write_json(dir.path() / "gpus" / "othergpu.json", fltest::test_gpu_profile());

  SECTION("unknown gpu profile") {
    CHECK_THAT(config_error(config_with({{"gpu", "nosuch"}})),
               Contains("test.json: $.gpu") && Contains("unknown gpus profile \"nosuch\"") &&
                   Contains("known: othergpu, testgpu"));
  }
  SECTION("unknown link profile") {
    CHECK_THAT(config_error(config_with({{"peer_link", "nvlink9"}})),
               Contains("$.peer_link") && Contains("unknown links profile \"nvlink9\"") &&
                   Contains("known: testlink"));
  }
  SECTION("unknown policy") {
    CHECK_THAT(config_error(config_with({{"policy", {{"name", "nope"}}}})),
               Contains("$.policy.name") && Contains("unknown policy \"nope\"") &&
                   Contains("ondemand"));
  }
  SECTION("an unknown capacity mode") {
    CHECK_THAT(config_error(config_with(
                   {{"capacity", {{"fraction_of_footprint", 0.5}, {"mode", "sometimes"}}}})),
               Contains("$.capacity.mode") && Contains("\"driver\"") && Contains("\"budget\""));
  }
  SECTION("a negative prefetch cost") {
    json gpu = fltest::test_gpu_profile();
    gpu["prefetch_call_ns"] = -1;
    fltest::write_json(dir.path() / "gpus" / "badgpu.json", gpu);
    CHECK_THAT(config_error(config_with({{"gpu", "badgpu"}})),
               Contains("prefetch_call_ns") && Contains("expected at least 0, got -1"));
  }
  SECTION("policy params that are not an object") {
    CHECK_THAT(config_error(config_with({{"policy", {{"params", 5}}}})),
               Contains("$.policy.params") && Contains("expected object"));
  }
  SECTION("policy without a name") {
    CHECK_THAT(config_error(config_with({{"policy", {{"name", nullptr}}}})),
               Contains("$.policy.name") && Contains("missing"));
  }
  SECTION("capacity with both bytes and fraction") {
    CHECK_THAT(
        config_error(config_with({{"capacity", {{"bytes", 1 << 30}}}})),
        Contains("$.capacity") &&
            Contains("exactly one of \"bytes\", \"fraction_of_footprint\" and \"spare_fraction\""));
  }
  SECTION("capacity with neither") {
    CHECK_THAT(config_error(config_with({{"capacity", {{"fraction_of_footprint", nullptr}}}})),
               Contains("$.capacity") && Contains("exactly one of"));
  }
  SECTION("capacity missing") {
    CHECK_THAT(config_error(config_with({{"capacity", nullptr}})),
               Contains("$.capacity") && Contains("missing"));
  }
  SECTION("capacity below one chunk or not positive") {
    CHECK_THAT(config_error(config_with(
                   {{"capacity", {{"fraction_of_footprint", nullptr}, {"bytes", 4096}}}})),
               Contains("$.capacity.bytes") &&
                   Contains("expected at least 2097152 (one 2 MB chunk), got 4096"));
    CHECK_THAT(config_error(config_with({{"capacity", {{"fraction_of_footprint", 0}}}})),
               Contains("$.capacity.fraction_of_footprint") && Contains("more than 0"));
  }
  SECTION("capacity with an unknown key") {
    CHECK_THAT(config_error(config_with({{"capacity", {{"fraction", 0.5}}}})),
               Contains("$.capacity.fraction") && Contains("unknown key"));
  }
  SECTION("driver eviction mru") {
    CHECK_THAT(config_error(config_with({{"driver", {{"eviction", "mru"}}}})),
               Contains("$.driver.eviction") &&
                   Contains("expected \"fifo\" or \"lru\", got \"mru\""));
  }
  SECTION("driver batch_size 0") {
    CHECK_THAT(config_error(config_with({{"driver", {{"batch_size", 0}}}})),
               Contains("$.driver.batch_size") && Contains("at least 1"));
  }
  SECTION("driver key typo") {
    CHECK_THAT(config_error(config_with({{"driver", {{"batchsize", 64}}}})),
               Contains("$.driver.batchsize") && Contains("unknown key") && Contains("batch_size"));
  }
  SECTION("driver values out of range") {
    CHECK_THAT(config_error(config_with({{"driver", {{"prefetch_threshold", 101}}}})),
               Contains("$.driver.prefetch_threshold") && Contains("1 to 100"));
    CHECK_THAT(config_error(config_with({{"driver", {{"thrashing_threshold", 1}}}})),
               Contains("$.driver.thrashing_threshold"));
    CHECK_THAT(config_error(config_with({{"driver", {{"thrashing_lapse_ns", 0}}}})),
               Contains("$.driver.thrashing_lapse_ns") && Contains("expected at least 1, got 0"));
    CHECK_THAT(config_error(config_with({{"driver", {{"batch_size", -1}}}})),
               Contains("$.driver.batch_size") && Contains("expected unsigned 32-bit integer"));
  }
  SECTION("driver that is not an object") {
    CHECK_THAT(config_error(config_with({{"driver", "fast"}})),
               Contains("$.driver") && Contains("expected object, got string"));
  }
  SECTION("top-level unknown key") {
    CHECK_THAT(config_error(config_with({{"polcy", {{"name", "ondemand"}}}})),
               Contains("test.json: $.polcy") && Contains("unknown key") && Contains("policy"));
  }
  SECTION("more than one GPU") {
    CHECK_THAT(config_error(config_with({{"gpus", 9}})), Contains("$.gpus") && Contains("1 to 8"));
  }
  SECTION("watchdog not positive") {
    CHECK_THAT(config_error(config_with({{"watchdog_ns", 0}})),
               Contains("$.watchdog_ns") && Contains("expected at least 1, got 0"));
  }
  SECTION("a config that is not an object") {
    CHECK_THAT(config_error(json::array()), Contains("test.json: $: expected object"));
  }
}

TEST_CASE("config: LinkCurve::transfer_ns", "[config]") {
  LinkCurve c;
  c.overhead_ns = 1000;
  c.points = {{4096, 4.0}, {65536, 16.0}, {1048576, 32.0}};
  SECTION("exact at the table points: overhead + ceil(bytes / GB/s)") {
    CHECK(c.transfer_ns(4096) == 1000 + 1024);
    CHECK(c.transfer_ns(65536) == 1000 + 4096);
    CHECK(c.transfer_ns(1048576) == 1000 + 32768);
  }
  SECTION("rounded up to whole nanoseconds") {
    LinkCurve odd;
    odd.overhead_ns = 0;
    odd.points = {{4096, 3.0}};
    CHECK(odd.transfer_ns(4096) == 1366); // 1365.33
    CHECK(odd.transfer_ns(1) == 1);
  }
  SECTION("interpolated in log2 of the size") {
    // 16 KB is half way from 4 KB to 64 KB in log2: 4 + (16 - 4) / 2 = 10 GB/s.
    CHECK(c.transfer_ns(16384) == 1000 + 1639); // 1638.4
    // 256 KB is half way from 64 KB to 1 MB: 24 GB/s.
    CHECK(c.transfer_ns(262144) == 1000 + 10923); // 10922.67
    // A quarter of the way: 8 KB is 1/4 of 4 KB..64 KB in log2: 4 + 12 / 4 = 7 GB/s.
    CHECK(c.transfer_ns(8192) == 1000 + 1171); // 1170.29
  }
  SECTION("flat beyond the ends") {
    CHECK(c.transfer_ns(1) == 1000 + 1);
    CHECK(c.transfer_ns(1024) == 1000 + 256);
    CHECK(c.transfer_ns(16 << 20) == 1000 + 524288);
    CHECK(c.transfer_ns(uint64_t{1} << 32) == 1000 + 134217728);
  }
  SECTION("nothing to copy takes no time") {
    CHECK(c.transfer_ns(0) == 0);
  }
  SECTION("a single point is flat everywhere") {
    LinkCurve one;
    one.overhead_ns = 5;
    one.points = {{65536, 2.0}};
    CHECK(one.transfer_ns(2) == 6);
    CHECK(one.transfer_ns(65536) == 5 + 32768);
    CHECK(one.transfer_ns(131072) == 5 + 65536);
  }
}

TEST_CASE("config: invalid link curves name the bad point", "[config]") {
  fltest::TempDir dir;
  fltest::write_test_profiles(dir.path());
  auto curve = [](const json& points) {
    return config_with(
        {{"host_link", {{"profile", "testlink"}, {"forward", {{"bandwidth_gbps", points}}}}}});
  };
  SECTION("descending sizes") {
    CHECK_THAT(config_error(curve({{65536, 16.0}, {4096, 4.0}})),
               Contains("testlink.json") && Contains("$.host_link.forward.bandwidth_gbps[1]") &&
                   Contains("strictly ascending"));
  }
  SECTION("a repeated size") {
    CHECK_THAT(config_error(curve({{4096, 4.0}, {65536, 16.0}, {65536, 17.0}})),
               Contains("$.host_link.forward.bandwidth_gbps[2]") && Contains("strictly ascending"));
  }
  SECTION("zero bandwidth") {
    CHECK_THAT(config_error(curve({{4096, 0.0}})),
               Contains("$.host_link.forward.bandwidth_gbps[0]") && Contains("positive"));
  }
  SECTION("negative bandwidth") {
    CHECK_THAT(config_error(curve({{4096, 4.0}, {65536, -16.0}})),
               Contains("$.host_link.forward.bandwidth_gbps[1]") && Contains("positive"));
  }
  SECTION("malformed points") {
    CHECK_THAT(config_error(curve({{4096, 4.0}, {65536}})),
               Contains("bandwidth_gbps[1]") && Contains("expected [transfer_bytes"));
    CHECK_THAT(config_error(curve({{-4096, 4.0}})), Contains("bandwidth_gbps[0]"));
    CHECK_THAT(config_error(curve({{4096, "fast"}})), Contains("bandwidth_gbps[0]"));
  }
  SECTION("empty") {
    CHECK_THAT(config_error(curve(json::array())),
               Contains("$.host_link.forward.bandwidth_gbps") && Contains("non-empty array"));
  }
  SECTION("not an array") {
    CHECK_THAT(config_error(curve(16.0)),
               Contains("$.host_link.forward.bandwidth_gbps") && Contains("non-empty array"));
  }
  SECTION("in the reverse direction of a profile file") {
    json link = fltest::test_link_profile();
    link["reverse"]["bandwidth_gbps"] = {{4096, 2.0}, {2048, 1.0}};
    fltest::write_json(dir.path() / "links" / "badlink.json", link);
    CHECK_THAT(config_error(config_with({{"peer_link", "badlink"}})),
               Contains("badlink.json") && Contains("$.peer_link.reverse.bandwidth_gbps[1]"));
  }
  SECTION("a link of an unknown kind") {
    json link = fltest::test_link_profile();
    link["kind"] = "infiniband";
    fltest::write_json(dir.path() / "links" / "ib.json", link);
    CHECK_THAT(config_error(config_with({{"host_link", "ib"}})),
               Contains("$.host_link.kind") && Contains("\"pcie\" or \"nvlink\""));
  }
  SECTION("a link curve with an unknown key") {
    json link = fltest::test_link_profile();
    link["forward"]["latency_ns"] = 5;
    fltest::write_json(dir.path() / "links" / "extra.json", link);
    CHECK_THAT(config_error(config_with({{"host_link", "extra"}})),
               Contains("$.host_link.forward.latency_ns") && Contains("unknown key"));
  }
}
