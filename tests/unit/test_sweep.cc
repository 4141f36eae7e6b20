// Sweeps: grid expansion, strict reading of the sweep file, parallel runs, resumption and
// byte-identical tables.
#include "sim/core/error.h"
#include "sim/sweep/sweep.h"
#include "test_support.h"

#include <catch2/catch.hpp>

using namespace faultline;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

// Test profiles, two small traces and a sweep file over them; returns the sweep file's path.
std::string write_sweep(const fltest::TempDir& dir, json overrides = json::object()) {
  fltest::write_test_profiles(dir.path() / "configs");
  fltest::write_small_trace(dir.file("a.fltrace"));
  fltest::write_small_trace(dir.file("b.fltrace"));
  json sweep = {
      {"name", "test"},
      {"base", fltest::test_run_config()},
      {"traces", {dir.file("a.fltrace"), dir.file("b.fltrace")}},
      {"policies", {"ondemand", {{"name", "pump"}, {"params", {{"memory_factor_percent", 60}}}}}},
      {"capacity_fractions", {1.0, 0.5}},
      {"vary", {{"/driver/eviction", {"fifo", "lru"}}}},
      {"out", dir.file("out")}};
  sweep.merge_patch(overrides);
  fltest::write_json(dir.file("sweep.json"), sweep);
  return dir.file("sweep.json");
}

} // namespace

TEST_CASE("sweep: the grid expands in trace, policy, capacity, varied-value order", "[sweep]") {
  fltest::TempDir dir;
  const sweep::Sweep s = sweep::load_sweep(write_sweep(dir));
  REQUIRE(s.points.size() == 16);
  const sweep::Point& p = s.points[13]; // trace b (8), pump (+4), capacity 1.0 (+0), lru (+1)
  CHECK(p.index == 13);
  CHECK(p.trace == dir.file("b.fltrace"));
  CHECK(p.policy["name"] == "pump");
  CHECK(p.capacity_fraction == 1.0);
  CHECK(p.varied == json({{"/driver/eviction", "lru"}}));
  CHECK(p.config["driver"]["eviction"] == "lru");
  CHECK(p.config["capacity"] == json({{"fraction_of_footprint", 1.0}, {"mode", "driver"}}));
  CHECK(p.config["policy"]["params"]["memory_factor_percent"] == 60);
  CHECK(s.points[0].policy == json({{"name", "ondemand"}, {"params", json::object()}}));
}

TEST_CASE("sweep: runs in parallel, resumes, and writes the same tables", "[sweep]") {
  fltest::TempDir dir;
  const sweep::Sweep s = sweep::load_sweep(write_sweep(dir));
  const sweep::Outcome first = sweep::run_sweep(s, {3, false, {}});
  CHECK(first.ran == 16);
  CHECK(first.reused == 0);
  const std::string csv = fltest::read_text(dir.file("out/results.csv"));
  const std::string table = fltest::read_text(dir.file("out/results.json"));
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 17);
  const json rows = json::parse(table)["points"];
  REQUIRE(rows.size() == 16);
  CHECK(rows[5]["config"]["capacity"].contains("resolved_bytes"));
  CHECK(rows[5]["point"]["index"] == 5);

  const sweep::Outcome again = sweep::run_sweep(s, {1, false, {}});
  CHECK(again.ran == 0);
  CHECK(again.reused == 16);
  std::filesystem::remove(dir.file("out/points/0006.json"));
  const sweep::Outcome resumed = sweep::run_sweep(s, {2, false, {}});
  CHECK(resumed.ran == 1);
  CHECK(fltest::read_text(dir.file("out/results.csv")) == csv);
  CHECK(fltest::read_text(dir.file("out/results.json")) == table);
}

TEST_CASE("sweep: shards run their points, and the merge writes the one-machine tables",
          "[sweep]") {
  fltest::TempDir one, many;
  const sweep::Sweep whole = sweep::load_sweep(write_sweep(one));
  REQUIRE(sweep::run_sweep(whole, {2, false, {}}).tables);
  const sweep::Sweep s = sweep::load_sweep(write_sweep(many));
  for (size_t i : {0, 2}) { // shards 0 and 2 of 3: 6 and 5 of the 16 points
    const sweep::Outcome shard = sweep::run_sweep(s, {1, false, {i, 3}});
    CHECK(shard.ran == (i == 0 ? 6 : 5));
    CHECK_FALSE(shard.tables);
  }
  CHECK_FALSE(std::filesystem::exists(many.file("out/results.csv")));
  // Shard 1 (points 1, 4, 7, 10, 13) has not run: the merge names its points.
  CHECK_THROWS_WITH(sweep::merge_sweep(s), Contains("5 of 16 points missing") &&
                                               Contains("(1, 4, 7, 10, 13)") &&
                                               Contains("--shard I/N"));
  const sweep::Outcome last = sweep::run_sweep(s, {2, false, {1, 3}});
  CHECK(last.ran == 5);
  CHECK(last.reused == 0); // the other shards' points are not this shard's
  CHECK(sweep::merge_sweep(s).tables);
  // The same bytes as the one-machine run, but for the paths of the traces and the output.
  const auto same = [&](const std::string& name) {
    std::string text = fltest::read_text(many.file("out/" + name));
    for (size_t at; (at = text.find(many.path().string())) != std::string::npos;)
      text.replace(at, many.path().string().size(), one.path().string());
    return text == fltest::read_text(one.file("out/" + name));
  };
  CHECK(same("results.csv"));
  CHECK(same("results.json"));
}

TEST_CASE("sweep: a point from a different sweep definition is not reused", "[sweep]") {
  fltest::TempDir dir;
  sweep::run_sweep(sweep::load_sweep(write_sweep(dir)), {2, false, {}});
  const sweep::Sweep changed =
      sweep::load_sweep(write_sweep(dir, {{"capacity_fractions", {1.0, 0.75}}}));
  const sweep::Outcome o = sweep::run_sweep(changed, {2, false, {}});
  CHECK(o.ran == 8); // the 0.75 points
  CHECK(o.reused == 8);
}

TEST_CASE("sweep: a failing point is named and the finished points are kept", "[sweep]") {
  fltest::TempDir dir;
  // At a quarter of the footprint the device allocation leaves no chunk for managed data.
  const sweep::Sweep s = sweep::load_sweep(write_sweep(dir, {{"capacity_fractions", {1.0, 0.25}}}));
  CHECK_THROWS_WITH(sweep::run_sweep(s, {1, false, {}}),
                    Contains("sweep test: point 2 (") && Contains("rerun to resume"));
  CHECK(std::filesystem::exists(dir.file("out/points/0001.json"))); // ran before point 2
  CHECK_FALSE(std::filesystem::exists(dir.file("out/results.csv")));
}

TEST_CASE("sweep: bad sweep files name the file, the JSON path and what was expected", "[sweep]") {
  fltest::TempDir dir;
  auto error_of = [&](json overrides) {
    try {
      sweep::load_sweep(write_sweep(dir, overrides));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(error_of({{"colour", "red"}}), Contains("sweep.json") && Contains("colour"));
  CHECK_THAT(error_of({{"capacity_fractions", {0.5, 1.5}}}),
             Contains("capacity_fractions") && Contains("(0, 1]"));
  CHECK_THAT(error_of({{"capacity_fractions", json::array()}}), Contains("non-empty"));
  CHECK_THAT(error_of({{"traces", {"missing.fltrace"}}}),
             Contains("missing.fltrace does not exist"));
  CHECK_THAT(error_of({{"policies", {"magic"}}}),
             Contains("magic") && Contains("ondemand") && Contains("pump"));
  CHECK_THAT(error_of({{"policies", {{{"name", "pump"}, {"params", {{"factor", 1}}}}}}}),
             Contains("factor"));
  CHECK_THAT(error_of({{"vary", {{"driver.eviction", {"lru"}}}}}), Contains("JSON pointer"));
  CHECK_THAT(error_of({{"vary", {{"/driver/eviction", {"random"}}}}}), Contains("eviction"));
  CHECK_THAT(error_of({{"base", 3}}), Contains("base") && Contains("run config"));
  CHECK_THAT(error_of({{"name", nullptr}}), Contains("name"));
  // Found by the sweep fuzzer (tests/fuzz/regressions/sweep/): nlohmann's own exceptions for a
  // pointer it cannot parse or a path through a value that is not an object, and a few lines of
  // "vary" that expand to 2^40 points.
  CHECK_THAT(error_of({{"vary", {{"/pol~cy/params", {1}}}}}),
             Contains("sweep.json") && Contains("$.vary[\"/pol~cy/params\"]") &&
                 Contains("expected a JSON pointer"));
  CHECK_THAT(error_of({{"vary", {{"/policy/name/x", {1}}}}}),
             Contains("$.vary[\"/policy/name/x\"]") && Contains("cannot set 1 there"));
  json vary = json::object();
  for (int i = 0; i < 40; ++i) vary["/driver/x" + std::to_string(i)] = {1, 2};
  CHECK_THAT(error_of({{"vary", vary}}),
             Contains("sweep.json") && Contains("the grid holds more than 100000 points") &&
                 Contains("x 2 x 2") && Contains("split it"));
}
