// Strict config reading at its lowest layer: the Reader's diagnostics (missing values, wrong
// types, unknown keys, each with the file and JSON path), its record of resolved values, and
// load_json_file's errors.
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

TEST_CASE("config: Reader reports missing values with their JSON path", "[config]") {
  const json doc = {{"a", json::object()}};
  Reader r(doc, "f.json");
  Reader a = r.child("a");
  CHECK_THROWS_AS(a.get<uint64_t>("b"), ConfigError);
  CHECK_THROWS_WITH(a.get<uint64_t>("b"),
                    Contains("f.json") && Contains("$.a.b") && Contains("missing"));
  CHECK_THROWS_WITH(r.child("zz"), Contains("$.zz") && Contains("missing"));
}

TEST_CASE("config: Reader reports values of the wrong type", "[config]") {
  const json doc = {{"a",
                     {{"b", "x"},
                      {"n", -3},
                      {"big", uint64_t{1} << 33},
                      {"f", 1.5},
                      {"obj", json::object()},
                      {"t", true}}}};
  Reader r(doc, "f.json");
  Reader a = r.child("a");
  CHECK_THROWS_WITH(a.get<uint64_t>("b"),
                    Contains("f.json: $.a.b") && Contains("expected unsigned integer, got string"));
  CHECK_THROWS_WITH(a.get<uint64_t>("n"),
                    Contains("$.a.n") &&
                        Contains("expected unsigned integer, got negative integer -3"));
  CHECK_THROWS_WITH(a.get<uint32_t>("big"),
                    Contains("$.a.big") && Contains("expected unsigned 32-bit integer"));
  CHECK_THROWS_WITH(a.get<int64_t>("f"),
                    Contains("$.a.f") && Contains("expected integer, got number with a fraction"));
  CHECK_THROWS_WITH(a.get<std::string>("t"), Contains("expected string, got boolean"));
  CHECK_THROWS_WITH(a.get<bool>("b"), Contains("expected boolean, got string"));
  CHECK_THROWS_WITH(a.get<double>("obj"), Contains("expected number, got object"));
  CHECK_THROWS_WITH(a.child("b"), Contains("$.a.b") && Contains("expected object, got string"));
  CHECK_THROWS_WITH(Reader(json::array(), "g.json"),
                    Contains("g.json: $: expected object, got array"));
  // A wrong type is an error even when there is a default.
  CHECK_THROWS_WITH(a.get<uint64_t>("b", 5), Contains("expected unsigned integer, got string"));
  // And the right types read.
  CHECK(a.get<int64_t>("n") == -3);
  CHECK(a.get<uint64_t>("big") == uint64_t{1} << 33);
  CHECK(a.get<double>("f") == 1.5);
  CHECK(a.get<double>("n") == -3.0);
  CHECK(a.get<bool>("t"));
}

TEST_CASE("config: Reader names unknown keys and the known ones", "[config]") {
  const json doc = {{"a", {{"b", 1}, {"c", 2}, {"zz", 3}}}};
  Reader r(doc, "f.json");
  Reader a = r.child("a");
  a.get<uint64_t>("b");
  a.get<uint64_t>("c");
  a.get<uint64_t>("d", 4); // a default counts as known
  CHECK_THROWS_AS(a.finish(), ConfigError);
  CHECK_THROWS_WITH(a.finish(), Contains("f.json: $.a.zz") && Contains("unknown key") &&
                                    Contains("known keys here: b, c, d"));
  a.get<uint64_t>("zz");
  CHECK_NOTHROW(a.finish());
  CHECK_NOTHROW(r.finish()); // the root read "a"
}

TEST_CASE("config: Reader records every value and default in resolved()", "[config]") {
  const json doc = {{"x", 1}, {"sub", {{"y", "s"}}}, {"params", {{"p", 2}}}};
  Reader r(doc, "f.json");
  CHECK(r.get<uint64_t>("x") == 1);
  CHECK(r.get<bool>("flag", true) == true);
  CHECK(r.get<std::string>("label", "none") == "none");
  Reader sub = r.child("sub");
  CHECK(sub.get<std::string>("y") == "s");
  CHECK(sub.get<int64_t>("z", -7) == -7);
  sub.finish();
  Reader opt = r.optional_child("driver");
  CHECK(opt.get<uint32_t>("n", 7) == 7);
  CHECK(opt.get<double>("ratio", 0.5) == 0.5);
  opt.finish();
  CHECK(r.raw("params", json::object()) == json{{"p", 2}});
  CHECK(r.raw("extra", json::array({1, 2})) == json::array({1, 2}));
  CHECK(r.has("x"));
  CHECK_FALSE(r.has("flag"));
  r.finish();
  const json want = {{"x", 1},
                     {"flag", true},
                     {"label", "none"},
                     {"sub", {{"y", "s"}, {"z", -7}}},
                     {"driver", {{"n", 7}, {"ratio", 0.5}}},
                     {"params", {{"p", 2}}},
                     {"extra", {1, 2}}};
  CHECK(r.resolved() == want);
  CHECK(sub.resolved() == want["sub"]);
  CHECK(opt.resolved() == want["driver"]);
}

TEST_CASE("config: load_json_file names the file and the syntax error", "[config]") {
  fltest::TempDir dir;
  const std::string bad = dir.file("bad.json");
  fltest::write_text(bad, "{\n  \"a\": 1,\n  oops\n}\n");
  CHECK_THROWS_WITH(load_json_file(bad),
                    Contains(bad) && Contains("invalid JSON") && Contains("line 3"));
  CHECK_THROWS_WITH(load_json_file(dir.file("missing.json")),
                    Contains("missing.json") && Contains("cannot open"));
  // Found by fuzzing (tests/fuzz/regressions/run_config/): a number past a double's range threw
  // nlohmann's out_of_range, which is no parse_error.
  fltest::write_text(bad, "{\n  \"a\": 1,\n  \"per_fault_ns\": 7478072e663\n}\n");
  CHECK_THROWS_AS(load_json_file(bad), ConfigError);
  // Found by fuzzing (tests/fuzz/regressions/run_config/profile-name-too-long): a profile name
  // past the file system's name limit threw std::filesystem's error, which is no ConfigError.
  CHECK_THROWS_WITH(parse_run_config({{"gpu", std::string(300, 'x')},
                                      {"capacity", {{"fraction_of_footprint", 0.5}}}},
                                     "run.json"),
                    Contains("run.json") && Contains("unknown gpus profile"));
  CHECK_THROWS_WITH(load_json_file(bad), Contains(bad) &&
                                             Contains("invalid JSON at line 3, column 19") &&
                                             Contains("number overflow parsing '7478072e663'"));
  const std::string good = dir.file("good.json");
  fltest::write_json(good, {{"a", 1}});
  CHECK(load_json_file(good) == json{{"a", 1}});
  // Found by fuzzing (tests/fuzz/regressions/sweep/base-is-a-folder.json): a folder opens as a
  // stream, then its first read threw std::ios_base::failure, which is no ConfigError.
  const std::string folder = dir.path().string();
  CHECK_THROWS_WITH(load_json_file(folder),
                    Contains(folder) && Contains("is a folder; expected a JSON file"));
}
