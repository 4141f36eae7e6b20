// `faultline calibrate` without a GPU: the benchmarks' bookkeeping against the fake device, the
// fit (it must recover a profile whose simulated benchmarks it is given), and bad measurements.
#include "fake_device.h"
#include "sim/core/error.h"
#include "sim/live/calibrate.h"
#include "sim/live/calibrate_faults.h"
#include "source_dir.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <set>

namespace live = faultline::live;
using nlohmann::json;

namespace {

// A quick grid's measurements with plausible H200-like numbers.
json measurements() {
  json faults = json::array();
  for (const char* kind : {"populate", "migrate"})
    for (int blocks : {1, 8})
      for (int k : {1, 32}) {
        const bool migrate = std::string(kind) == "migrate";
        faults.push_back({{"kind", kind},
                          {"blocks", blocks},
                          {"pages_per_block", k},
                          {"ns", 40000 + blocks * (10000 + k * (migrate ? 9000 : 4000))}});
      }
  return {
      {"device", "made-up GPU"},
      {"repeats", 1},
      {"faultline", {{"git_revision", "test"}}},
      {"kernel_overhead_ns", 10000},
      {"prefetch_call_ns", 3000},
      {"host_to_gpu", {{65536, 40000}, {2097152, 90000}, {8388608, 190000}}},
      {"gpu_to_host", {{65536, 30000}, {2097152, 160000}, {8388608, 560000}}},
      {"eviction", {{"chunks", 4}, {"ns", 800000}}},
      {"prefetch_blocks",
       {{"blocks", 4}, {"resident_ns", 16000}, {"populate_ns", 100000}, {"migrate_ns", 500000}}},
      {"host_fault", {{"bytes", 4194304}, {"ns", 1500000}}},
      {"faults", faults},
      {"peer", nullptr}};
}

live::CalibrationSettings settings() {
  live::CalibrationSettings j;
  j.name = "testgpu";
  j.base = "h200";
  j.quick = true;
  return j;
}

} // namespace

TEST_CASE("calibrate: the benchmarks cover every kind and refuse a GPU without room",
          "[calibrate]") {
  fltest::FakeDevice device;
  device.host_write_delay = std::chrono::milliseconds(2);
  live::CalibrationSettings j = settings();
  j.margin = 0;
  const json m = live::measure(device, j);
  // populate and migrate x (2 block counts x 2 densities, one point strided)
  REQUIRE(m["faults"].size() == 10);
  int strided_points = 0;
  for (const json& f : m["faults"]) strided_points += f.value("order", "block") == "strided";
  CHECK(strided_points == 2);
  CHECK(m["host_to_gpu"].size() == 3);
  CHECK(m["gpu_to_host"].size() == 3);
  CHECK(m["peer"].is_null()); // the fake has no second GPU
  for (const char* key : {"kernel_overhead_ns", "prefetch_call_ns", "replay", "eviction",
                          "prefetch_blocks", "host_fault"})
    CHECK(m.contains(key));
  // The host's first writes, timed on the largest transfer's fresh allocation (the fake's writes
  // take host_write_delay each).
  CHECK(m["host_populate"]["bytes"] == 8 << 20);
  CHECK(m["host_populate"]["ns"].get<int64_t>() >= 2'000'000);
  CHECK(m["swap"]["pairs"] == 4); // as many pairs as the eviction benchmark's chunks
  CHECK(m["swap"]["apart_ns"].get<int64_t>() >= 0); // the same calls apart, timed beside them
  // Eight more evictions of the benchmark's size, spread through the calibration.
  REQUIRE(m["eviction"]["samples_ns"].size() == 8);
  for (const json& ns : m["eviction"]["samples_ns"]) CHECK(ns.get<int64_t>() >= 0);
  // The warm-up evicts and brings back its chunks three times before any measurement.
  CHECK(m["warm_up"]["chunks"] == 4);
  REQUIRE(m["warm_up"]["eviction_ns_per_chunk"].size() == 3);
  for (const json& ns : m["warm_up"]["eviction_ns_per_chunk"]) CHECK(ns.get<int64_t>() >= 0);
  CHECK(device.kernel_pages.size() > 8);
  CHECK(m["replay"]["calls_per_kernel"].size() == 3); // 8, 32 and 128 calls before a kernel
  // The fault benchmarks touched the pages they describe: 4 blocks x 32 pages in one kernel.
  // Block by block (a block's pages next to each other), and strided (one page of each block in
  // turn: the second touch is the next block's).
  bool dense = false, strided = false;
  for (const auto& pages : device.kernel_pages) {
    if (pages.size() != 4 * 32) continue;
    dense |= pages[1] == pages[0] + faultline::kBigPageSize;
    strided |= pages[1] == pages[0] + faultline::kBlockSize;
  }
  CHECK(dense);
  CHECK(strided);
  // Each one follows a kernel faulting one page outside it, a different page each repeat.
  std::set<uint64_t> warm_ups;
  for (size_t i = 1; i < device.kernel_pages.size(); ++i) {
    const auto& pages = device.kernel_pages[i];
    if (pages.size() != 4 * 32) continue;
    const bool discard_bench =
        i + 1 < device.kernel_pages.size() && device.kernel_pages[i + 1].size() == 4 * 16;
    if (discard_bench) continue; // it writes the blocks it then discards
    REQUIRE(device.kernel_pages[i - 1].size() == 1);
    const uint64_t warm = device.kernel_pages[i - 1][0];
    CHECK(std::find(pages.begin(), pages.end(), warm) == pages.end());
    warm_ups.insert(warm);
  }
  // populate and migrate, each block by block and strided
  CHECK(warm_ups.size() == 4 * j.repeats);
  // Discarded pages: kernel-written blocks, half of each discarded, the other half staying or
  // evicted, then a kernel on the discarded halves; beside the same kernel on fresh halves.
  const json& d = m["discarded_touch"];
  CHECK(d["blocks"] == 4);
  CHECK(d["pages"] == 4 * 16);
  for (const char* key : {"fresh_ns", "resident_ns", "evicted_ns"}) CHECK(d.contains(key));
  bool halves = false;
  for (const auto& pages : device.kernel_pages) halves |= pages.size() == 4 * 16;
  CHECK(halves);

  fltest::FakeDevice small;
  small.free = 4ull << 20;
  CHECK_THROWS_WITH(live::measure(small, settings()),
                    Catch::Contains("refusing to run") && Catch::Contains("--margin"));
  CHECK(small.kernel_pages.empty());
}

TEST_CASE("calibrate: the fit recovers a profile from its own simulated benchmarks",
          "[calibrate]") {
  const live::FittedProfile first = live::fit(measurements(), settings());
  // Measurements without the discarded_touch benchmark leave its costs to their default.
  CHECK(!first.gpu.contains("discarded_fault_ns"));
  CHECK(!first.gpu.contains("discarded_resident_fault_ns"));
  CHECK(first.gpu["name"] == "testgpu");
  CHECK(first.gpu["host_link"] == "testgpu-host");
  CHECK(first.peer_link.is_null());
  // prefetch costs come straight from their benchmark: 16 us / 4 calls
  CHECK(first.gpu["prefetch_call_ns"] == 4000);
  CHECK(first.gpu["prefetch_populate_ns"] == (100000 / 4 - 4000) / 32);
  // A call that copies: 125 us a block, less the call and a 2 MB copy to the GPU (at least
  // 40 us), not one to the host (over 120 us, which would leave nothing).
  CHECK(first.gpu["prefetch_copy_extra_ns"].get<int64_t>() > 20000);
  CHECK(first.gpu["prefetch_copy_extra_ns"].get<int64_t>() < 125000 - 4000 - 40000);
  CHECK(first.gpu["launch_ns"] == 10000);
  CHECK_FALSE(first.gpu.contains("fault_report_ns")); // the replay no longer drains
  // Measurements that the first fit reproduces exactly are fitted again within 2%.
  json again = measurements();
  const json& rows = first.report["faults"];
  for (size_t i = 0; i < rows.size(); ++i) again["faults"][i]["ns"] = rows[i]["simulated_ns"];
  const live::FittedProfile second = live::fit(again, settings());
  CHECK(second.report["median_abs_error"].get<double>() <= 0.02);
  // Deterministic: the same measurements give the same profile.
  CHECK(live::fit(again, settings()).gpu == second.gpu);
}

TEST_CASE("calibrate: the replay's rhythm gives the per-kernel costs and the call between "
          "kernels",
          "[calibrate]") {
  json m = measurements();
  m["replay"] = {{"kernel_ns", 9000},
                 {"after_drain_ns", 49000},
                 {"prefetches", 8},
                 {"with_prefetches_ns", 49000}};
  const live::FittedProfile p = live::fit(m, settings());
  CHECK(p.gpu["launch_ns"] == 10000);
  CHECK(p.gpu["prefetch_call_ns"] == 5000);
  // With kernels after 8, 32 and 128 calls, the call costs the slope over all of them: here
  // 5 us a call up to 32, 7 us beyond.
  m["replay"]["calls_per_kernel"] = {{8, 49000}, {32, 169000}, {128, 841000}};
  const auto slope = live::fit(m, settings()).gpu["prefetch_call_ns"].get<int64_t>();
  CHECK(slope > 6000);
  CHECK(slope < 7000);
  m["replay"]["calls_per_kernel"] = {{32, 169000}, {8, 49000}};
  CHECK_THROWS_WITH(live::fit(m, settings()),
                    Catch::Contains("$.replay.calls_per_kernel[1]: expected [calls, ns]"));
  m["replay"].erase("calls_per_kernel");
  m["replay"]["prefetches"] = 0;
  CHECK_THROWS_WITH(live::fit(m, settings()), Catch::Contains("$.replay.prefetches"));
}

TEST_CASE("calibrate: faults on discarded pages cost populate_ns plus their extra over a "
          "first touch",
          "[calibrate]") {
  json m = measurements();
  m["discarded_touch"] = {{"blocks", 4},
                          {"pages", 64},
                          {"fresh_ns", 640'000},
                          {"resident_ns", 10'240'000},
                          {"evicted_ns", 5'440'000}};
  const live::FittedProfile p = live::fit(m, settings());
  const auto populate = p.gpu["populate_ns"].get<int64_t>();
  CHECK(p.gpu["discarded_resident_fault_ns"].get<int64_t>() == populate + 150'000);
  CHECK(p.gpu["discarded_fault_ns"].get<int64_t>() == populate + 75'000);
  m["discarded_touch"].erase("evicted_ns");
  CHECK_THROWS_WITH(live::fit(m, settings()), Catch::Contains("$.discarded_touch"));
}

TEST_CASE("calibrate: the host's first touch of fresh memory gives host_populate_ns per 64 KB",
          "[calibrate]") {
  const auto says = [](const json& sources, const std::string& text) {
    for (const json& line : sources)
      if (line.get<std::string>().find(text) != std::string::npos) return true;
    return false;
  };
  json m = measurements();
  // Older measurements keep the base profile's value and its line in `sources`, so a refit of a
  // shipped profile gives it back.
  std::ifstream in(std::string(FAULTLINE_SOURCE_DIR) + "/configs/gpus/h200.json");
  const json base = json::parse(in);
  const live::FittedProfile older = live::fit(m, settings());
  CHECK(older.gpu["host_populate_ns"] == base["host_populate_ns"]);
  CHECK(says(older.gpu["sources"], base["sources"].back().get<std::string>()));
  m["host_populate"] = {{"bytes", 8 << 20}, {"ns", 2'944'000}}; // 128 big pages, 23 us each
  const live::FittedProfile p = live::fit(m, settings());
  CHECK(p.gpu["host_populate_ns"] == 23'000);
  CHECK(says(p.gpu["sources"], "host_populate_ns: the host writing one byte per 4 KB page of "
                               "8192 KB"));
  m["host_populate"] = {{"bytes", 96 << 10}, {"ns", 60'000}}; // not a multiple of 64 KB
  CHECK(live::fit(m, settings()).gpu["host_populate_ns"] == 40'000);
  m["host_populate"]["bytes"] = 4096;
  CHECK_THROWS_WITH(live::fit(m, settings()),
                    Catch::Contains("$.host_populate.bytes: expected at least 65536"));
  m["host_populate"] = {{"bytes", 8 << 20}, {"ns", "slow"}};
  CHECK_THROWS_WITH(live::fit(m, settings()), Catch::Contains("$.host_populate"));
  m["host_populate"] = {{"ns", 1000}};
  CHECK_THROWS_WITH(live::fit(m, settings()), Catch::Contains("$.host_populate"));
}

TEST_CASE("calibrate: an eviction and a prefetch in turn cost swap_extra_ns beyond the two apart",
          "[calibrate]") {
  json m = measurements();
  CHECK_FALSE(live::fit(m, settings()).gpu.contains("swap_extra_ns")); // older measurements
  // 200 us a chunk evicted (800 us / 4) and 125 us a block of host data prefetched (500 / 4)
  m["swap"] = {{"pairs", 4}, {"ns", 4 * (200'000 + 125'000 + 30'000)}};
  CHECK(live::fit(m, settings()).gpu["swap_extra_ns"] == 30'000);
  m["swap"]["ns"] = 4 * 300'000; // cheaper than its parts: nothing extra, never negative
  CHECK(live::fit(m, settings()).gpu["swap_extra_ns"] == 0);
  m["swap"]["ns"] = "slow";
  CHECK_THROWS_WITH(live::fit(m, settings()), Catch::Contains("$.swap.ns"));
  // Since the same calls apart are timed beside the pairs, against them, whatever the other
  // benchmarks found minutes before.
  m["swap"] = {{"pairs", 4}, {"ns", 4 * 300'000}, {"apart_ns", 4 * 280'000}};
  CHECK(live::fit(m, settings()).gpu["swap_extra_ns"] == 20'000);
  m["swap"]["apart_ns"] = 4 * 310'000;
  CHECK(live::fit(m, settings()).gpu["swap_extra_ns"] == 0);
  m["swap"]["apart_ns"] = nullptr;
  CHECK_THROWS_WITH(live::fit(m, settings()), Catch::Contains("$.swap.apart_ns"));
}

TEST_CASE("calibrate: chunks holding spread pages give eviction_run_ns against one run",
          "[calibrate]") {
  json m = measurements();
  json base;
  std::ifstream(std::string(FAULTLINE_SOURCE_DIR) + "/configs/gpus/h200.json") >> base;
  // Older measurements keep the base profile's value and its source line.
  const live::FittedProfile kept = live::fit(m, settings());
  CHECK(kept.gpu["eviction_run_ns"] == base["eviction_run_ns"]);
  CHECK(kept.gpu["sources"].dump().find("eviction_run_ns:") != std::string::npos);
  // 4 chunks of 8 runs: 4 x 7 runs beyond the first cost 28 x 2 us.
  m["eviction_runs"] = {{"chunks", 4}, {"runs", 8}, {"first_ns", 280'000}, {"spread_ns", 336'000}};
  const live::FittedProfile p = live::fit(m, settings());
  CHECK(p.gpu["eviction_run_ns"] == 2'000);
  CHECK(p.gpu["sources"].dump().find("8 spread 64 KB pages") != std::string::npos);
  m["eviction_runs"]["spread_ns"] = 270'000; // faster spread: nothing, never negative
  CHECK(live::fit(m, settings()).gpu["eviction_run_ns"] == 0);

  // The full chunks (200 us each) and the 8-page ones (70 us) give eviction_ns and
  // eviction_page_ns: the full chunk costs what it cost before, less and more split.
  const int64_t plain = kept.gpu["eviction_ns"].get<int64_t>();
  CHECK_FALSE(kept.gpu.contains("eviction_page_ns"));
  const int64_t page = p.gpu["eviction_page_ns"].get<int64_t>();
  CHECK(page > 0);
  CHECK(p.gpu["eviction_ns"].get<int64_t>() < plain);
  CHECK(std::abs(p.gpu["eviction_ns"].get<int64_t>() + 32 * page - plain) <= 32);
  // 8 pages costing as much a chunk as 32 (another eviction level): all stays in eviction_ns.
  json level = m;
  level["eviction_runs"]["first_ns"] = 4 * 200'000;
  const live::FittedProfile flat = live::fit(level, settings());
  CHECK(flat.gpu["eviction_ns"] == plain);
  CHECK_FALSE(flat.gpu.contains("eviction_page_ns"));
  // Without the fresh case the base's eviction_populate_ns stays, with its source line; with
  // it, the fresh chunks' extra over the same 8 pages of host data, per chunk, never negative.
  CHECK(p.gpu["eviction_populate_ns"] == base["eviction_populate_ns"]);
  CHECK(p.gpu["sources"].dump().find("eviction_populate_ns:") != std::string::npos);
  json fresh = m;
  fresh["eviction_runs"]["fresh_ns"] = 280'000 + 4 * 500'000;
  const live::FittedProfile f = live::fit(fresh, settings());
  CHECK(f.gpu["eviction_populate_ns"] == 500'000);
  CHECK(f.gpu["sources"].dump().find("never-touched memory") != std::string::npos);
  fresh["eviction_runs"]["fresh_ns"] = 200'000;
  CHECK(live::fit(fresh, settings()).gpu["eviction_populate_ns"] == 0);
  fresh["eviction_runs"]["fresh_ns"] = "slow";
  CHECK_THROWS_WITH(live::fit(fresh, settings()), Catch::Contains("$.eviction_runs"));
  m["eviction_runs"]["runs"] = 1;
  CHECK_THROWS_WITH(live::fit(m, settings()), Catch::Contains("$.eviction_runs.runs"));
  m["eviction_runs"]["runs"] = 32;
  CHECK_THROWS_WITH(live::fit(m, settings()), Catch::Contains("expected 2 to 31"));
  m["eviction_runs"]["runs"] = 8;
  m["eviction_runs"].erase("first_ns");
  CHECK_THROWS_WITH(live::fit(m, settings()), Catch::Contains("$.eviction_runs"));
}

TEST_CASE("calibrate: eviction samples through the calibration show its spread, not its price",
          "[calibrate]") {
  json m = measurements();
  const int64_t alone = live::fit(m, settings()).gpu["eviction_ns"]; // 200 us a chunk, less copy
  CHECK(live::fit(m, settings()).gpu["sources"].dump().find("samples") == std::string::npos);
  // Two levels, as H200s switch between: 200 us and 300 us a chunk; their mean 240 us.
  m["eviction"]["samples_ns"] = {800'000, 1'200'000, 1'200'000, 800'000};
  const live::FittedProfile c = live::fit(m, settings());
  CHECK(c.gpu["eviction_ns"] == alone); // still the benchmark's
  CHECK(c.gpu["sources"].dump().find("4 samples") != std::string::npos);
  CHECK(c.gpu["sources"].dump().find("200 to 300 us a chunk with its copy, 240 on average") !=
        std::string::npos);
  m["eviction"]["samples_ns"][2] = "slow";
  CHECK_THROWS_WITH(live::fit(m, settings()),
                    Catch::Contains("$.eviction.samples_ns[2]") && Catch::Contains("nanoseconds"));
  m["eviction"]["samples_ns"] = 5;
  CHECK_THROWS_WITH(live::fit(m, settings()), Catch::Contains("$.eviction.samples_ns"));
}

TEST_CASE("calibrate --eviction-ns: the benchmark and the copies back priced at the given level",
          "[calibrate]") {
  const auto back_gbps = [](const live::FittedProfile& f) {
    return f.host_link["reverse"]["bandwidth_gbps"].back()[1].get<double>();
  };
  const auto chunk_back_ns = [&](const live::FittedProfile& f) { // LinkCurve::transfer_ns
    return f.host_link["reverse"]["overhead_ns"].get<int64_t>() +
           static_cast<int64_t>(std::ceil(2097152 / back_gbps(f)));
  };
  json m = measurements(); // the benchmark: 200 us a chunk with its copy
  const live::FittedProfile own = live::fit(m, settings());
  m["eviction"]["priced_at_ns"] = 300'000; // the upper level, in a full calibration too
  const live::FittedProfile upper = live::fit(m, settings());
  CHECK(back_gbps(upper) == Approx(back_gbps(own) / 1.5).epsilon(0.01));
  CHECK(upper.gpu["eviction_ns"] == 300'000 - chunk_back_ns(upper));
  CHECK(upper.gpu["eviction_ns"].get<int64_t>() > own.gpu["eviction_ns"].get<int64_t>());
  CHECK(upper.gpu["sources"].dump().find("priced at 300 us a chunk with its copy as given by "
                                         "--eviction-ns (150% of the benchmark") !=
        std::string::npos);
  // It replaces a per-machine calibration's mean of the benchmark and its samples.
  m["fault_path_from"] = live::fault_path_of("h200");
  m["eviction"]["samples_ns"] = {560'000, 600'000};
  m["eviction"]["priced_at_ns"] = 150'000;
  const live::FittedProfile lower = live::fit(m, settings());
  CHECK(back_gbps(lower) == Approx(back_gbps(own) / 0.75).epsilon(0.01));
  CHECK(lower.gpu["eviction_ns"] == 150'000 - chunk_back_ns(lower));
  CHECK(lower.gpu["sources"].dump().find("(75% of the benchmark") != std::string::npos);
  for (const json& bad : {json(0), json(-5), json(1.5), json("fast")}) {
    m["eviction"]["priced_at_ns"] = bad;
    CHECK_THROWS_WITH(live::fit(m, settings()), Catch::Contains("$.eviction.priced_at_ns") &&
                                                    Catch::Contains("expected a whole number"));
  }
}

TEST_CASE("calibrate: a fault benchmark's touches come block by block or in rounds",
          "[calibrate]") {
  using live::FaultOrder;
  CHECK(live::fault_touches(2, 2, FaultOrder::kBlock) == std::vector<uint64_t>{0, 16, 32, 48});
  CHECK(live::fault_touches(2, 2, FaultOrder::kStrided) == std::vector<uint64_t>{0, 32, 16, 48});
  CHECK(live::fault_touches(3, 1, FaultOrder::kStrided) == std::vector<uint64_t>{0, 32, 64});
  CHECK(live::fault_touches(1, 32, FaultOrder::kStrided).size() == 32);
}

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
  // path at four points of each kind, and the profile whose fault path is kept, recorded.
  fltest::FakeDevice device;
  live::CalibrationSettings per_machine = settings();
  per_machine.quick = false;
  per_machine.from = "h100";
  per_machine.margin = 0;
  const json m = live::measure(device, per_machine);
  CHECK(m["faults"].size() == 8);
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
  CHECK(derived["faults"].size() == 8);
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
  }
  // A strided point is never taken for the block-order point of the same size.
  json reordered = measured;
  for (size_t i = 0; i < reordered["faults"].size(); ++i)
    if (reordered["faults"][i].value("order", "block") == "strided") {
      const json point = reordered["faults"][i]; // a copy: the insert may move the array
      reordered["faults"].insert(reordered["faults"].begin(), point);
      reordered["faults"].erase(reordered["faults"].begin() + static_cast<std::ptrdiff_t>(i) + 1);
    }
  const json from_reordered = live::per_machine_measurements(reordered, "h200");
  for (const json& f : from_reordered["faults"]) CHECK_FALSE(f.contains("order"));
  // A per-machine calibration's own measurements: the fault path kept is swapped, nothing else.
  json swapped = live::per_machine_measurements(direct, "h100");
  CHECK(swapped["fault_path_from"]["profile"] == "h100");
  CHECK(swapped["fault_path_replaced"] == direct["fault_path_from"]);
  swapped.erase("fault_path_replaced");
  swapped["fault_path_from"] = direct["fault_path_from"];
  CHECK(swapped == direct);
  // Bad input: neither kind of calibration, an unknown profile, a full one missing a point.
  CHECK_THROWS_WITH(live::per_machine_measurements(json{{"device", "x"}}, "h200"),
                    Catch::Contains("expected a calibration's"));
  CHECK_THROWS_WITH(live::per_machine_measurements(direct, "h999"), Catch::Contains("h999"));
  json gap = measured;
  gap["faults"].erase(0);
  CHECK_THROWS_WITH(live::per_machine_measurements(gap, "h200"),
                    Catch::Contains("$.faults: no populate point of 1 blocks x 1 pages"));
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
