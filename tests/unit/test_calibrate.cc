// `faultline calibrate` without a GPU: the benchmarks' bookkeeping against the fake device, the
// fit (it must recover a profile whose simulated benchmarks it is given) and each cost's
// benchmark. Several calibrations, other instances' and bad measurements:
// test_calibrate_combine.cc.
#include "calibrate_support.h"
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
using namespace faultline::live::testing;
using nlohmann::json;

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
  CHECK(m["peer"].is_null());          // the fake has no second GPU
  CHECK(m["cupti_counters"] == false); // measured as programs run, unless --cupti-counters
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
  REQUIRE(m["warm_up"]["prefetch_ns_per_chunk"].size() == 3);
  for (const json& ns : m["warm_up"]["prefetch_ns_per_chunk"]) CHECK(ns.get<int64_t>() >= 0);
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
    if (discard_bench) break; // the last benchmark writes whole blocks it then discards
    REQUIRE(device.kernel_pages[i - 1].size() == 1);
    const uint64_t warm = device.kernel_pages[i - 1][0];
    CHECK(std::find(pages.begin(), pages.end(), warm) == pages.end());
    warm_ups.insert(warm);
  }
  // populate and migrate, each block by block and strided, and the evicted blocks' faults
  CHECK(warm_ups.size() == 5 * j.repeats);
  // Discarded pages: kernel-written blocks, half of each discarded, the other half staying or
  // evicted (or the whole block evicted over them), then a kernel on the discarded halves;
  // beside the same kernel on fresh halves.
  const json& d = m["discarded_touch"];
  CHECK(d["blocks"] == 4);
  CHECK(d["pages"] == 4 * 16);
  for (const char* key : {"fresh_ns", "resident_ns", "evicted_ns", "covered_ns",
                          "prefetch_fresh_ns", "prefetch_discarded_ns", "prefetch_covered_ns"})
    CHECK(d.contains(key));
  CHECK(d.contains("evict_evicted_ns"));
  CHECK(d.contains("evict_covered_ns"));
  // The fault shapes again on blocks prefetched to the GPU and evicted back, a call a block.
  CHECK(m["refaults"].size() > 0);
  for (const json& r : m["refaults"]) CHECK(r["pages_per_block"].get<int>() > 1);
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
  // The profile says whether CUPTI's counters ran: measurements from before the switch did.
  const auto first_source = [](const live::FittedProfile& p) {
    return p.gpu["sources"][0].get<std::string>();
  };
  CHECK_THAT(first_source(first), Catch::Contains("CUPTI's unified-memory counters on"));
  again["cupti_counters"] = false;
  CHECK_THAT(first_source(live::fit(again, settings())),
             Catch::Contains("CUPTI's unified-memory counters off"));
  again["cupti_counters"] = "no";
  CHECK_THROWS_WITH(live::fit(again, settings()),
                    Catch::Contains("$.cupti_counters: expected true or false"));
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
  // Measurements before the prefetch cases leave discarded_prefetch_ns to its default.
  CHECK(!p.gpu.contains("discarded_prefetch_ns"));
  m["discarded_touch"]["prefetch_fresh_ns"] = 200'000;
  m["discarded_touch"]["prefetch_discarded_ns"] = 1'480'000;
  const live::FittedProfile q = live::fit(m, settings());
  CHECK(q.gpu["discarded_prefetch_ns"].get<int64_t>() ==
        q.gpu["prefetch_populate_ns"].get<int64_t>() + 20'000);
  CHECK(!q.report.contains("discarded_then_evicted")); // measured since the covered cases only
  // Discarded, then evicted by a call over them too: reported beside the discarded fault's cost.
  m["discarded_touch"]["covered_ns"] = 1'280'000;
  m["discarded_touch"]["prefetch_covered_ns"] = 840'000;
  const live::FittedProfile r = live::fit(m, settings());
  CHECK(r.report["discarded_then_evicted"]["write_ns_per_64k"].get<int64_t>() == populate + 10'000);
  CHECK(r.report["discarded_then_evicted"]["prefetch_ns_per_64k"].get<int64_t>() ==
        r.gpu["prefetch_populate_ns"].get<int64_t>() + 10'000);
  CHECK(r.report["discarded_then_evicted"]["discarded_fault_ns"] == r.gpu["discarded_fault_ns"]);
  // The eviction calls timed apart: the call over a discarded half costs the difference, a block.
  CHECK(!r.gpu.contains("eviction_discarded_ns")); // the base (h200) has none
  m["discarded_touch"]["evict_evicted_ns"] = 10'000'000;
  m["discarded_touch"]["evict_covered_ns"] = 10'200'000; // 4 blocks
  const live::FittedProfile e = live::fit(m, settings());
  CHECK(e.gpu["eviction_discarded_ns"].get<int64_t>() == 50'000);
  m["discarded_touch"]["evict_covered_ns"] = 9'000'000; // noise: never below nothing
  CHECK(live::fit(m, settings()).gpu["eviction_discarded_ns"].get<int64_t>() == 0);
  m["discarded_touch"].erase("evict_covered_ns");
  m["discarded_touch"].erase("evict_evicted_ns");
  m["discarded_touch"].erase("prefetch_fresh_ns");
  CHECK_THROWS_WITH(live::fit(m, settings()),
                    Catch::Contains("$.discarded_touch") && Catch::Contains("prefetch_fresh_ns"));
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
