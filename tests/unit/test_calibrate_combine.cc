// `faultline calibrate` from more than one measurement: --pool (other instances' fault
// benchmarks), --from (one machine's few measurements over an earlier profile), --refit and
// --combine (one instance's calibrations at several moments), and bad measurements.
#include "calibrate_support.h"
#include "fake_device.h"
#include "sim/core/error.h"
#include "sim/live/calibrate.h"
#include "sim/live/calibrate_faults.h"
#include "source_dir.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <set>

namespace live = faultline::live;
using namespace faultline::live::testing;
using nlohmann::json;

TEST_CASE("calibrate --pool: other instances' fault benchmarks join the fit", "[calibrate]") {
  const json mine = measurements();
  json other = measurements();
  for (json& f : other["faults"]) f["ns"] = f["ns"].get<int64_t>() * 2;
  const json doc = {{"name", "gpu-b"},
                    {"measured_by", "faultline calibrate --name gpu-b"},
                    {"measurements", other}};
  const json pooled = live::pooled_measurements(mine, {{"b.json", doc}});
  REQUIRE(pooled["faults"].size() == 2 * mine["faults"].size());
  CHECK(pooled["faults"][0] == mine["faults"][0]); // its own first, untouched
  const json& joined = pooled["faults"][mine["faults"].size()];
  CHECK(joined["instance"] == "gpu-b");
  CHECK(joined["ns"] == 2 * mine["faults"][0]["ns"].get<int64_t>());
  CHECK(pooled["pooled_from"] == json::array({{{"name", "gpu-b"},
                                               {"measured_by", doc["measured_by"]},
                                               {"device", "made-up GPU"},
                                               {"points", mine["faults"].size()}}}));
  // Pooling again keeps the first list.
  json third = doc;
  third["name"] = "gpu-c";
  const json twice = live::pooled_measurements(pooled, {{"c.json", third}});
  REQUIRE(twice["pooled_from"].size() == 2);
  CHECK(twice["pooled_from"][1]["name"] == "gpu-c");
  CHECK(twice["faults"].size() == 3 * mine["faults"].size());
  json rest = pooled;
  rest.erase("pooled_from");
  rest["faults"] = mine["faults"];
  CHECK(rest == mine); // nothing else changes
  // The fit takes them all: halfway between the two instances' fault costs.
  const live::FittedProfile alone = live::fit(mine, settings());
  const live::FittedProfile both = live::fit(pooled, settings());
  CHECK(both.report["faults"].size() == pooled["faults"].size());
  CHECK(both.gpu["per_fault_ns"] != alone.gpu["per_fault_ns"]);
  bool named = false;
  for (const json& line : both.gpu["sources"])
    named |= line.get<std::string>().find("gpu-b") != std::string::npos;
  CHECK(named);
  // Bad input: a per-machine calibration, another GPU model, no fault points.
  json per_machine = doc;
  per_machine["measurements"]["fault_path_from"] = {{"profile", "h200"}};
  CHECK_THROWS_WITH(live::pooled_measurements(mine, {{"pm.json", per_machine}}),
                    Catch::Contains("pm.json") && Catch::Contains("full calibration"));
  json model = doc;
  model["measurements"]["device"] = "another GPU";
  CHECK_THROWS_WITH(live::pooled_measurements(mine, {{"m.json", model}}),
                    Catch::Contains("m.json") && Catch::Contains("one GPU model"));
  json empty = doc;
  empty["measurements"].erase("faults");
  CHECK_THROWS_WITH(live::pooled_measurements(mine, {{"e.json", empty}}),
                    Catch::Contains("e.json"));
}

TEST_CASE("calibrate: bad measurements name the JSON path", "[calibrate]") {
  json m = measurements();
  m.erase("faults");
  CHECK_THROWS_WITH(live::fit(m, settings()), Catch::Contains("$: missing \"faults\""));
  m = measurements();
  m["host_to_gpu"][1][0] = 100;
  CHECK_THROWS_WITH(live::fit(m, settings()),
                    Catch::Contains("$.host_to_gpu[1]") && Catch::Contains("ascending"));
  m = measurements();
  m["faults"][2]["kind"] = "teleport";
  CHECK_THROWS_WITH(live::fit(m, settings()),
                    Catch::Contains("$.faults[2].kind") && Catch::Contains("\"populate\""));
  m = measurements();
  m["eviction"]["ns"] = "fast";
  CHECK_THROWS_WITH(live::fit(m, settings()),
                    Catch::Contains("$.eviction.ns") && Catch::Contains("nanoseconds"));
  m = measurements();
  m["faults"][1]["order"] = "zigzag";
  CHECK_THROWS_WITH(live::fit(m, settings()),
                    Catch::Contains("$.faults[1].order") && Catch::Contains("\"strided\""));
  m = measurements();
  m["faults"][0]["pages_per_block"] = 3;
  CHECK_THROWS_WITH(live::fit(m, settings()),
                    Catch::Contains("$.faults[0]") && Catch::Contains("divide 32"));
}

TEST_CASE("calibrate --from: one machine's few measurements, an earlier profile's fault path",
          "[calibrate]") {
  // The measurements: the warm-up, the direct benchmarks, one large transfer each way, the fault
  // path at twelve points of each kind (two strided), and the profile the fault path's fit starts
  // from, recorded.
  fltest::FakeDevice device;
  live::CalibrationSettings per_machine = settings();
  per_machine.quick = false;
  per_machine.from = "h100";
  per_machine.margin = 0;
  const json m = live::measure(device, per_machine);
  CHECK(m["faults"].size() == 24);
  CHECK(std::count_if(m["faults"].begin(), m["faults"].end(),
                      [](const json& f) { return f.value("order", "block") == "strided"; }) == 4);
  CHECK(m["fault_path_fitted"] == true);
  {
    fltest::FakeDevice kept_device;
    live::CalibrationSettings keep = per_machine;
    keep.keep_fault_path = true;
    const json k = live::measure(kept_device, keep);
    CHECK_FALSE(k.contains("fault_path_fitted"));
    CHECK(k["fault_path_from"] == m["fault_path_from"]);
  }
  CHECK(m["host_to_gpu"].size() == 2);
  CHECK_FALSE(m.contains("peer")); // the base's peer link stays
  for (const char* key : {"warm_up", "eviction", "swap", "eviction_runs", "prefetch_blocks",
                          "replay", "host_fault", "discarded_touch"})
    CHECK(m.contains(key));
  const json& from = m["fault_path_from"];
  CHECK(from["profile"] == "h100");
  CHECK(from["fault_parallelism"].get<int64_t>() > 0);

  // The fit keeps the fault path, reports it against this machine's fault benchmarks, and takes
  // the rest from the measurements as a full calibration does.
  json measured = measurements();
  measured["fault_path_from"] = from;
  live::CalibrationSettings refit = settings();
  refit.base = "h100";
  const live::FittedProfile p = live::fit(measured, refit);
  for (const char* key :
       {"batch_fixed_ns", "per_fault_ns", "per_vablock_ns", "page_table_update_ns", "populate_ns",
        "fault_migrate_ns", "fault_parallelism"})
    CHECK(p.gpu[key] == from[key]);
  CHECK(p.host_link["forward"]["overhead_ns"] == from["copy_overhead_ns"]);
  CHECK(p.host_link["reverse"]["overhead_ns"] == from["copy_overhead_ns"]);
  CHECK(p.report["fault_path_from"] == "h100");
  CHECK(p.report["faults"].size() == measured["faults"].size());
  CHECK(p.gpu["prefetch_call_ns"] == 4000); // measured, as in the full calibration
  CHECK(p.gpu["memory_bytes"] == live::fit(measurements(), refit).gpu["memory_bytes"]);
  CHECK(p.gpu["sources"].dump().find("kept from profile h100") != std::string::npos);
  CHECK(live::fit(measured, refit).gpu == p.gpu); // deterministic

  // Fitted (what `calibrate --from` does now): the fit starts from the profile's values and ends
  // nearer this machine's benchmarks than the kept values are; the report says both.
  json fitted_m = measured;
  fitted_m["fault_path_fitted"] = true;
  const live::FittedProfile f = live::fit(fitted_m, refit);
  CHECK(f.report["fault_path_fitted"] == true);
  CHECK(f.report["fault_path_from"] == "h100");
  CHECK(f.report["kept"]["median_abs_error"] == p.report["median_abs_error"]);
  CHECK(f.report["median_abs_error"].get<double>() < p.report["median_abs_error"].get<double>());
  CHECK(f.gpu["per_fault_ns"] != from["per_fault_ns"]);
  CHECK(f.gpu["sources"].dump().find("from profile h100's values") != std::string::npos);
  CHECK(f.gpu["prefetch_call_ns"] == p.gpu["prefetch_call_ns"]); // the rest as kept
  CHECK(live::fit(fitted_m, refit).gpu == f.gpu);                // deterministic
  fitted_m["fault_path_fitted"] = "yes";
  CHECK_THROWS_WITH(live::fit(fitted_m, refit), Catch::Contains("$.fault_path_fitted"));

  // The replays pay a mix of an eviction's two levels: the per-machine fit prices the benchmark
  // and the copies back at the mean of the benchmark and its samples, down where the benchmark met
  // the upper level (here 86%), up where it met the lower. A full calibration's keep the
  // benchmark's (the shipped profiles price every instance).
  measured["eviction"]["samples_ns"] = {560'000, 600'000, 790'000};
  const live::FittedProfile lower = live::fit(measured, refit);
  const auto back_gbps = [](const live::FittedProfile& f) {
    return f.host_link["reverse"]["bandwidth_gbps"].back()[1].get<double>();
  };
  CHECK(back_gbps(lower) == Approx(back_gbps(p) / 0.859).epsilon(0.02));
  CHECK(lower.gpu["eviction_ns"].get<int64_t>() < p.gpu["eviction_ns"].get<int64_t>());
  CHECK(lower.gpu["sources"].dump().find("priced at that average (86% of the benchmark)") !=
        std::string::npos);
  measured["eviction"]["samples_ns"] = {800'000, 800'000}; // as the benchmark: as measured
  CHECK(live::fit(measured, refit).gpu["eviction_ns"] == p.gpu["eviction_ns"]);
  measured["eviction"]["samples_ns"] = {1'200'000, 1'200'000}; // the upper level: dearer
  const live::FittedProfile upper = live::fit(measured, refit);
  CHECK(back_gbps(upper) == Approx(back_gbps(p) / 1.333).epsilon(0.02));
  CHECK(upper.gpu["eviction_ns"].get<int64_t>() > p.gpu["eviction_ns"].get<int64_t>());
  json full = measurements();
  full["eviction"]["samples_ns"] = {560'000, 580'000, 800'000};
  CHECK(live::fit(full, refit).gpu["eviction_ns"] ==
        live::fit(measurements(), refit).gpu["eviction_ns"]);

  // Bad input: a value missing from the kept fault path, an unknown profile before anything is
  // measured.
  measured["fault_path_from"].erase("per_fault_ns");
  CHECK_THROWS_WITH(live::fit(measured, refit),
                    Catch::Contains("$.fault_path_from: missing \"per_fault_ns\""));
  measured["fault_path_from"] = "h100";
  CHECK_THROWS_WITH(live::fit(measured, refit), Catch::Contains("$.fault_path_from.profile"));
  fltest::FakeDevice untouched;
  per_machine.from = "h999";
  CHECK_THROWS_WITH(live::measure(untouched, per_machine), Catch::Contains("h999"));
  CHECK(untouched.kernel_pages.empty());
}

TEST_CASE("calibrate --refit FULL --from: a per-machine calibration derived from a full one's "
          "measurements",
          "[calibrate]") {
  fltest::FakeDevice device;
  live::CalibrationSettings full = settings();
  full.quick = false;
  full.margin = 0;
  const json measured = live::measure(device, full);
  const json derived = live::per_machine_measurements(measured, "h200");
  CHECK(derived["derived_from_full_calibration"] == true);
  CHECK(derived["fault_path_from"]["profile"] == "h200");
  CHECK(derived["fault_path_fitted"] == true);
  CHECK_FALSE(live::per_machine_measurements(measured, "h200", true).contains("fault_path_fitted"));
  CHECK(derived["faults"].size() == 24);
  CHECK(derived["host_to_gpu"] == json::array({measured["host_to_gpu"].back()}));
  CHECK(derived["eviction"] == measured["eviction"]);
  CHECK_FALSE(derived.contains("peer"));
  // What a per-machine calibration measures, point for point.
  live::CalibrationSettings per_machine = full;
  per_machine.from = "h200";
  fltest::FakeDevice other;
  const json direct = live::measure(other, per_machine);
  for (size_t i = 0; i < direct["faults"].size(); ++i) {
    CHECK(derived["faults"][i]["kind"] == direct["faults"][i]["kind"]);
    CHECK(derived["faults"][i]["blocks"] == direct["faults"][i]["blocks"]);
    CHECK(derived["faults"][i]["pages_per_block"] == direct["faults"][i]["pages_per_block"]);
    CHECK(derived["faults"][i].value("order", "block") ==
          direct["faults"][i].value("order", "block"));
  }
  // A full calibration from before the strided benchmarks: its per-machine one goes without, and
  // says so.
  json unstrided = measured;
  json block_only = json::array();
  for (const json& point : unstrided["faults"])
    if (point.value("order", "block") == "block") block_only.push_back(point);
  unstrided["faults"] = block_only;
  const json older = live::per_machine_measurements(unstrided, "h200");
  CHECK(older["faults"].size() == 20);
  CHECK(older["fault_points_not_measured"].get<std::string>().find("strided") == 0);
  // A strided point is never taken for the block-order point of the same size.
  json reordered = measured;
  for (size_t i = 0; i < reordered["faults"].size(); ++i)
    if (reordered["faults"][i].value("order", "block") == "strided") {
      const json point = reordered["faults"][i]; // a copy: the insert may move the array
      reordered["faults"].insert(reordered["faults"].begin(), point);
      reordered["faults"].erase(reordered["faults"].begin() + static_cast<std::ptrdiff_t>(i) + 1);
    }
  const json from_reordered = live::per_machine_measurements(reordered, "h200");
  CHECK(from_reordered["faults"] == derived["faults"]);
  // A per-machine calibration's own measurements: the fault path kept is swapped, nothing else.
  json swapped = live::per_machine_measurements(direct, "h100");
  CHECK(swapped["fault_path_from"]["profile"] == "h100");
  CHECK(swapped["fault_path_replaced"] == direct["fault_path_from"]);
  swapped.erase("fault_path_replaced");
  swapped["fault_path_from"] = direct["fault_path_from"];
  CHECK(swapped == direct);
  // --keep-fault-path on a refit: the document's fault path is kept, not fitted.
  CHECK_FALSE(live::per_machine_measurements(direct, "h100", true).contains("fault_path_fitted"));
  // Bad input: neither kind of calibration, an unknown profile, a full one missing a point.
  CHECK_THROWS_WITH(live::per_machine_measurements(json{{"device", "x"}}, "h200"),
                    Catch::Contains("expected a calibration's"));
  CHECK_THROWS_WITH(live::per_machine_measurements(direct, "h999"), Catch::Contains("h999"));
  json gap = measured;
  gap["faults"].erase(0);
  CHECK_THROWS_WITH(live::per_machine_measurements(gap, "h200"),
                    Catch::Contains("$.faults: no populate block point of 1 blocks x 1 pages"));
  gap["faults"][0]["blocks"] = "sixteen"; // a malformed point is not the one looked for
  CHECK_THROWS_WITH(live::per_machine_measurements(gap, "h200"), Catch::Contains("$.faults"));
}

TEST_CASE("calibrate --combine: one instance's calibrations at several moments, each time their "
          "median",
          "[calibrate]") {
  const auto doc = [](const std::string& name, int64_t eviction_ns, int64_t call_ns) {
    json m = measurements();
    m["eviction"]["ns"] = eviction_ns;
    m["prefetch_call_ns"] = call_ns;
    m["host_to_gpu"][2][1] = 190000 + call_ns;
    m["faults"][1]["ns"] = 1000 * call_ns;
    m["eviction"]["samples_ns"] = {eviction_ns + 1, eviction_ns + 2};
    return json{
        {"name", name}, {"measured_by", "faultline calibrate --name " + name}, {"measurements", m}};
  };
  const std::vector<std::pair<std::string, json>> three = {{"a.json", doc("gpu-a", 800000, 5000)},
                                                           {"b.json", doc("gpu-b", 1000000, 3000)},
                                                           {"c.json", doc("gpu-c", 900000, 3100)}};
  const json m = live::combined_measurements(three);
  CHECK(m["eviction"]["ns"] == 900000);
  CHECK(m["eviction"]["chunks"] == 4); // a size, not a time
  // Samples spread through each calibration: pooled, every moment's.
  CHECK(m["eviction"]["samples_ns"] ==
        json::array({800001, 800002, 1000001, 1000002, 900001, 900002}));
  CHECK(m["prefetch_call_ns"] == 3100);
  CHECK(m["host_to_gpu"][2] == json::array({8388608, 193100})); // [bytes, ns]: the ns only
  CHECK(m["faults"][1]["ns"] == 3100000);
  CHECK(m["faults"][1]["blocks"] == measurements()["faults"][1]["blocks"]);
  CHECK(m["device"] == "made-up GPU");
  REQUIRE(m["combined_from"].size() == 3);
  CHECK(m["combined_from"][1] == json{{"path", "b.json"},
                                      {"name", "gpu-b"},
                                      {"measured_by", "faultline calibrate --name gpu-b"}});
  json rest = m, reordered = live::combined_measurements({three[2], three[0], three[1]});
  rest.erase("combined_from");
  reordered.erase("combined_from");
  rest["eviction"].erase("samples_ns");
  reordered["eviction"].erase("samples_ns");
  CHECK(rest == reordered); // the medians do not depend on their order
  // Two: the mean of the middle two, whole ns.
  const json two = live::combined_measurements({three[0], {"d.json", doc("gpu-d", 900001, 3000)}});
  CHECK(two["eviction"]["ns"] == 850001);
  CHECK(two["prefetch_call_ns"] == 4000);
  // The fit names them.
  const live::FittedProfile fitted = live::fit(m, settings());
  bool named = false;
  for (const json& line : fitted.gpu["sources"])
    named |= line.get<std::string>().find("gpu-a, gpu-b, gpu-c") != std::string::npos;
  CHECK(named);

  // Bad input names the file and the JSON path.
  const auto fails = [&](json other, const std::string& where) {
    CHECK_THROWS_WITH(live::combined_measurements({three[0], {"x.json", other}}),
                      Catch::Contains("x.json: " + where) && Catch::Contains("a.json"));
  };
  json sized = three[1].second;
  sized["measurements"]["eviction"]["chunks"] = 8;
  fails(sized, "$.eviction.chunks: 8 where");
  json model = three[1].second;
  model["measurements"]["device"] = "another GPU";
  fails(model, "$.device: \"another GPU\" where");
  json fewer = three[1].second;
  fewer["measurements"]["faults"].erase(0);
  fails(fewer, "$.faults: 7 elements");
  json missing = three[1].second;
  missing["measurements"].erase("host_fault");
  fails(missing, "$.host_fault: none where");
  json typed = three[1].second;
  typed["measurements"]["host_fault"] = 1;
  fails(typed, "$.host_fault: a number where");
  json extra = three[1].second;
  extra["measurements"]["peer_uvm"] = {{"ns", 1}};
  fails(extra, "$.peer_uvm: a value where");
  json kept = three[1].second, kept0 = three[0].second;
  kept0["measurements"]["fault_path_from"] = {{"profile", "h200"}, {"per_fault_ns", 5000}};
  kept["measurements"]["fault_path_from"] = {{"profile", "h200"}, {"per_fault_ns", 6000}};
  CHECK_THROWS_WITH(live::combined_measurements({{"a.json", kept0}, {"x.json", kept}}),
                    Catch::Contains("x.json: $.fault_path_from.per_fault_ns"));
  CHECK_THROWS_WITH(live::combined_measurements({three[0], {"m.json", json{{"name", "m"}}}}),
                    Catch::Contains("m.json: expected a calibration document"));
  json again = three[1].second;
  again["measurements"] = m;
  CHECK_THROWS_WITH(live::combined_measurements({three[0], {"c2.json", again}}),
                    Catch::Contains("c2.json: combined already"));
  CHECK_THROWS_WITH(live::combined_measurements({three[0]}), Catch::Contains("at least two"));
}

TEST_CASE("calibrate --combine-by fastest: the moment whose fault benchmarks took least, kept "
          "whole",
          "[calibrate]") {
  // A moment with every fault benchmark `scale` times the made-up one's and its own eviction.
  const auto doc = [](const std::string& name, double scale, int64_t eviction_ns) {
    json m = measurements();
    for (json& f : m["faults"])
      f["ns"] = static_cast<int64_t>(static_cast<double>(f["ns"].get<int64_t>()) * scale);
    m["eviction"]["ns"] = eviction_ns;
    return json{
        {"name", name}, {"measured_by", "faultline calibrate --name " + name}, {"measurements", m}};
  };
  const std::vector<std::pair<std::string, json>> three = {{"a.json", doc("gpu-a", 1.7, 700000)},
                                                           {"b.json", doc("gpu-b", 1.0, 950000)},
                                                           {"c.json", doc("gpu-c", 1.6, 800000)}};
  const json m = live::combined_measurements(three, live::CombineBy::kFastest);
  // b's measurements whole, its eviction too though a's was cheaper: one moment, not a mix.
  json b = three[1].second["measurements"];
  json kept = m;
  kept.erase("combined_from");
  kept.erase("combined_by");
  CHECK(kept == b);
  CHECK(m["combined_by"] == "fastest");
  REQUIRE(m["combined_from"].size() == 3);
  int64_t b_total = 0;
  for (const json& f : b["faults"]) b_total += f["ns"].get<int64_t>();
  CHECK(m["combined_from"][1]["faults_ns"] == b_total);
  CHECK(m["combined_from"][1]["kept"] == true);
  CHECK_FALSE(m["combined_from"][0].contains("kept"));
  CHECK(m["combined_from"][0]["faults_ns"].get<int64_t>() > b_total);
  // The median's way is said too.
  CHECK(live::combined_measurements(three)["combined_by"] == "median");
  // The fit says which moment it took.
  bool named = false;
  const live::FittedProfile fitted = live::fit(m, settings());
  for (const json& line : fitted.gpu["sources"]) {
    named |= line.get<std::string>().find("gpu-b's, the moment whose fault benchmarks took least "
                                          "of gpu-a, gpu-b, gpu-c") != std::string::npos;
  }
  CHECK(named);
  // The moments must agree as for the median, and each must time its fault benchmarks.
  json sized = three[2].second;
  sized["measurements"]["eviction"]["chunks"] = 8;
  CHECK_THROWS_WITH(
      live::combined_measurements({three[0], {"x.json", sized}}, live::CombineBy::kFastest),
      Catch::Contains("x.json: $.eviction.chunks: 8 where"));
  json untimed = three[2].second, untimed0 = three[0].second;
  untimed["measurements"]["faults"][3]["ns"] = "slow";
  untimed0["measurements"]["faults"][3]["ns"] = "slow";
  CHECK_THROWS_WITH(live::combined_measurements({{"a.json", untimed0}, {"x.json", untimed}},
                                                live::CombineBy::kFastest),
                    Catch::Contains("a.json: $.faults[3].ns: expected a time in ns"));
}
