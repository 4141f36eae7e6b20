// The live replay's memory against a fake device: evictions send whole chunks and never undo a
// discard, --eviction-bytes and --drain-counters, a neighbour's spare budget, a policy's
// actions on the clock, allocations of any size and alignment, and kernels larger than the
// budget cut alike in the simulator and the replay.
#include "fake_device.h"
#include "policies/registry.h"
#include "replay_support.h"
#include "sim/core/error.h"
#include "sim/host/residency.h"
#include "sim/live/replay.h"
#include "sim/run/simulator.h"
#include "sim/synth/synth.h"
#include "sim/trace/reader.h"
#include "sim/trace/writer.h"
#include "sim_fixture.h"
#include "source_dir.h"
#include "test_support.h"

#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <vector>

using faultline::kBigPageSize;
using faultline::kBlockSize;
namespace live = faultline::live;
using fltest::dnn_trace;
using fltest::FakeDevice;
using fltest::fault_log;

TEST_CASE("replay: an eviction sends the whole chunk, pages the driver brought beside the "
          "touched ones too",
          "[live]") {
  // Each kernel touches one page of another chunk; the device brings the rest of the chunk, as
  // the driver's density prefetch does. Evicting only the touched page would leave 31 pages of
  // every victim on the GPU, past the budget.
  fltest::TempDir dir;
  const std::string path = dir.file("sparse.fltrace");
  constexpr faultline::Addr kBase = 1ull << 32;
  {
    namespace trace = faultline::trace;
    trace::TraceWriter w(path, {{"source", "test"}});
    w.write(trace::AllocRecord{1, trace::MemoryKind::kManaged, kBase, 8 * kBlockSize, 0, 0});
    trace::KernelRecord k;
    k.name = "k";
    k.duration = 1000;
    for (uint64_t chunk = 0; chunk < 8; ++chunk) {
      k.start = 10'000 * (chunk + 1);
      k.accesses = {{(kBase + chunk * kBlockSize) / kBigPageSize, 0, faultline::AccessType::kRead}};
      w.write(k);
    }
    w.close();
  }
  FakeDevice device;
  live::ReplayRequest request;
  request.trace_path = path;
  request.budget_bytes = 2 * kBlockSize;
  request.margin = 0;
  request.counters = true;
  const auto result = live::run_replay(request, device);
  CHECK(result["results"]["evictions"].get<uint64_t>() == 6);
  CHECK(result["results"]["bytes_gpu_to_host"] == 6 * kBlockSize);
  CHECK(result["config"]["cupti_counters"] == true);
  CHECK(device.peak_chunks <= 2);
  CHECK_FALSE(result.contains("evictions"));

  SECTION("--eviction-bytes: a row per eviction, the books' pages beside the bytes back") {
    FakeDevice measured;
    request.eviction_bytes = true;
    const auto rows = live::run_replay(request, measured)["evictions"];
    REQUIRE(rows.size() == 6);
    for (size_t i = 0; i < rows.size(); ++i) {
      CHECK(rows[i]["kernel"] == i + 2); // kernel i + 2 needs chunk i's room
      CHECK(rows[i]["for"] == "kernel #" + std::to_string(i + 2) + " (k)");
      CHECK(rows[i]["chunk"] == kBase + i * kBlockSize);
      CHECK(rows[i]["pages_held"] == 1);
      CHECK(rows[i]["bytes_to_host"] == kBlockSize);
    }
    CHECK(measured.quiesced >= 2 * 6 + 8); // around each eviction, after each kernel
    CHECK(live::run_replay(request, measured)["config"]["counters_drained"] ==
          "around every eviction and after every kernel");
  }
  SECTION("--drain-counters: CUPTI drained after every kernel, off the clock, the bytes the same") {
    FakeDevice drained;
    drained.quiesce_delay = std::chrono::milliseconds(20);
    request.drain_counters = true;
    const auto out = live::run_replay(request, drained);
    CHECK(drained.quiesced >= 8);
    CHECK(out["config"]["counters_drained"] == "after every kernel");
    CHECK(out["results"]["bytes_gpu_to_host"] == result["results"]["bytes_gpu_to_host"]);
    CHECK(out["results"]["bytes_gpu_to_host"] == 6 * kBlockSize);
    // Eight drains of 20 ms: on the clock they would add 160 ms.
    CHECK(out["results"]["total_time_ns"].get<double>() <
          result["results"]["total_time_ns"].get<double>() + 50e6);
  }
  CHECK(result["config"]["counters_drained"] == "at step boundaries");

  SECTION("without CUPTI's counters: the bytes and fault records are left out, not zero") {
    FakeDevice plain;
    request.counters = false;
    const auto out = live::run_replay(request, plain);
    CHECK(out["config"]["cupti_counters"] == false);
    CHECK(out["results"]["evictions"] == 6); // the replay's own count stays
    for (const char* field :
         {"bytes_host_to_gpu", "bytes_gpu_to_host", "faults", "dropped_counter_records"})
      CHECK_FALSE(out["results"].contains(field));
    for (const auto& step : out["steps"]) CHECK_FALSE(step.contains("bytes_gpu_to_host"));
    // What reads CUPTI is refused without them, before the GPU is touched.
    request.drain_counters = true;
    CHECK_THROWS_WITH(live::run_replay(request, plain), Catch::Contains("--counters"));
    request.drain_counters = false;
    request.eviction_bytes = true;
    CHECK_THROWS_WITH(live::run_replay(request, plain), Catch::Contains("--counters"));
  }
}

TEST_CASE("replay: an eviction never undoes a discard", "[live]") {
  // A real trace with allocator blocks: DeepUM discards a freed block's pages, then evicts the
  // 2 MB blocks around them; the eviction must leave the discarded pages out.
  for (const char* trace : {"resnet50", "pagerank"}) {
    FakeDevice device;
    live::ReplayRequest request;
    request.trace_path = std::string(FAULTLINE_SOURCE_DIR) + "/traces/real/" + trace + ".fltrace";
    request.policy = "deepum";
    request.budget_fraction = 0.75;
    request.margin = 0;
    INFO(trace);
    const auto result = live::run_replay(request, device);
    CHECK(result["results"]["discarded_bytes"].get<uint64_t>() > 0);
    CHECK(device.undone_discards == 0);
  }
}

TEST_CASE("replay: harvest evicts to the neighbour within its spare budget and keeps the "
          "reserve",
          "[live][multigpu]") {
  fltest::TempDir dir;
  FakeDevice device;
  device.peer_free = 1ull << 40;
  live::ReplayRequest request;
  request.trace_path = dnn_trace(dir, 3);
  request.budget_fraction = 0.5;
  request.margin = 0;
  request.policy = "harvest";
  request.policy_params = {{"reserve_chunks", 2}};
  request.peer_budget_bytes = 16 * kBlockSize;
  request.peer_reserve_bytes = 4 * kBlockSize;
  const auto result = live::run_replay(request, device);
  const auto& peers = result["results"]["peers"];
  CHECK(peers["evictions_to_peer"].get<uint64_t>() > 0);
  CHECK(!device.to_peer.empty());
  // Never more on the neighbour at once than its budget less its reserve.
  uint64_t bytes = 0;
  for (const auto& [address, n] : device.to_peer) bytes += n;
  CHECK(bytes ==
        peers["bytes_to_peer"].get<uint64_t>() + peers["bytes_staged_on_peer"].get<uint64_t>());
  CHECK(device.peak_chunks * kBlockSize <=
        result["config"]["budget"]["resolved_bytes"].get<uint64_t>());
  CHECK(result["config"]["peer_budget_bytes"] == 16 * kBlockSize);

  // Without a neighbour budget, the same policy evicts to the host only.
  FakeDevice alone;
  request.peer_budget_bytes = 0;
  const auto host_only = live::run_replay(request, alone);
  CHECK(alone.to_peer.empty());
  CHECK(host_only["results"]["peers"]["evictions_to_peer"] == 0);

  // A neighbour budget the next GPU cannot hold is refused before anything runs.
  FakeDevice small;
  small.peer_free = 8 * kBlockSize;
  request.peer_budget_bytes = 16 * kBlockSize;
  CHECK_THROWS_WITH(live::run_replay(request, small),
                    Catch::Matchers::Contains("refusing a neighbour budget"));
  CHECK(small.kernel_pages.empty());
}

TEST_CASE("replay: the actions a policy takes on a kernel's faults are on the clock, its "
          "deciding is not",
          "[live][multigpu]") {
  fltest::TempDir dir;
  FakeDevice device;
  device.evict_delay = std::chrono::microseconds(200); // a call that blocks, as the GPU's do
  live::ReplayRequest request;
  request.trace_path = dnn_trace(dir, 3);
  request.budget_fraction = 0.5;
  request.margin = 0;
  request.policy = "harvest"; // pre-evicts to the host on each kernel's faults
  request.policy_params = {
      {"reserve_chunks", 2}, {"evict_to_peer", false}, {"multi_path_prefetch", false}};
  const auto result = live::run_replay(request, device);
  const auto& r = result["results"];
  REQUIRE(r["policy_evicted_bytes"].get<int64_t>() > 0);
  // Every eviction call blocked 200 us, and every one is inside the run's time: the budget's
  // before a kernel and the policy's on a kernel's faults alike (before, the latter ran with the
  // clock paused, and pre-eviction looked free).
  const auto calls = static_cast<int64_t>(device.evictions_to_host);
  CHECK(r["total_time_ns"].get<int64_t>() >= calls * 200'000);
  CHECK(r["fault_actions_ns"].get<int64_t>() >= 200'000);
  CHECK(r["fault_actions_ns"].get<int64_t>() <= r["total_time_ns"].get<int64_t>());

  // Per kernel, the rows count every call issued since the row before, and the CPU's time in
  // them: the eviction calls add up to the device's, each with its 200 us.
  FakeDevice again;
  again.evict_delay = std::chrono::microseconds(200);
  request.per_kernel = true;
  const auto rows = live::run_replay(request, again)["kernels"];
  uint64_t to_host = 0, to_host_bytes = 0;
  for (const auto& row : rows) {
    if (!row.contains("to_host_calls")) continue;
    to_host += row["to_host_calls"].get<uint64_t>();
    to_host_bytes += row["to_host_bytes"].get<uint64_t>();
    CHECK(row["to_host_cpu_ns"].get<int64_t>() >= row["to_host_calls"].get<int64_t>() * 200'000);
    CHECK(row["to_host_bytes"].get<uint64_t>() > 0);
  }
  // All but the calls on the last kernel's faults, which come after its row.
  CHECK(to_host > 0);
  CHECK(to_host <= again.evictions_to_host);
  CHECK(to_host + 2 * 32 >= again.evictions_to_host);
  CHECK(to_host_bytes <= to_host * kBlockSize);
  CHECK(!rows.at(0).contains("to_peer_calls")); // kinds without calls stay out of the row
}

TEST_CASE("replay: allocations of any size and alignment, sharing pages and blocks, freed and "
          "made again at the same address, are touched inside their bounds",
          "[live]") {
  namespace trace = faultline::trace;
  fltest::TempDir dir;
  const std::string path = dir.file("odd.fltrace");
  constexpr faultline::Addr kBase = 1ull << 32;
  constexpr uint64_t kA = 3 * kBigPageSize + 4096 + 100; // not a multiple of 4 KB
  constexpr uint64_t kB = kBigPageSize + 7;              // starts where A ends, mid-page
  constexpr faultline::Addr kC = kBase + 2 * kBlockSize;
  const auto page = [](faultline::Addr a) { return a / kBigPageSize; };
  {
    trace::TraceWriter w(path, {{"source", "test"}});
    w.write(trace::AllocRecord{1, trace::MemoryKind::kManaged, kBase, kA, 0, 0});
    w.write(trace::AllocRecord{2, trace::MemoryKind::kManaged, kBase + kA, kB, 0, 0});
    w.write(trace::AllocRecord{3, trace::MemoryKind::kManaged, kC, 5000, 0, 0});
    trace::KernelRecord k;
    k.duration = 1000;
    k.start = 1000;
    for (faultline::Addr p = page(kBase); p <= page(kBase + kA + kB - 1); ++p)
      k.accesses.push_back({p, 0, faultline::AccessType::kWrite});
    w.write(k);
    k.accesses = {{page(kC), 0, faultline::AccessType::kRead}};
    k.start = 3000;
    w.write(k);
    w.write(trace::FreeRecord{3, 10'000});
    w.write(trace::AllocRecord{4, trace::MemoryKind::kManaged, kC, 200'000, 20'000, 0});
    k.accesses.clear();
    k.start = 30'000;
    for (faultline::Addr p = page(kC); p <= page(kC + 200'000 - 1); ++p)
      k.accesses.push_back({p, 0, faultline::AccessType::kRead});
    w.write(k);
    w.close();
  }
  for (double budget : {1.0, 0.4}) {
    FakeDevice device;
    device.misalign = 3 * 4096; // the live allocations need not be 64 KB aligned either
    live::ReplayRequest request;
    request.trace_path = path;
    request.margin = 0;
    // 1.0: two chunks, for three live ones (A and B share one in the trace, not live); 0.4: one
    // chunk, so the first kernel runs in two parts.
    request.budget_fraction = budget;
    const auto result = live::run_replay(request, device);
    INFO("budget " << budget);
    CHECK(device.touches_past_end == 0);
    CHECK(device.peak_chunks <= (budget == 1.0 ? 2u : 1u));
    // The first kernel's parts, as the device ran them.
    const size_t parts = budget == 1.0 ? 1 : 2;
    REQUIRE(device.kernel_pages.size() == parts + 2);
    std::vector<uint64_t> first;
    for (size_t i = 0; i < parts; ++i)
      first.insert(first.end(), device.kernel_pages[i].begin(), device.kernel_pages[i].end());
    // A's four pages; B's bytes in the trace's page 3 are its live page 0, those in page 4 its
    // pages 0 and 1.
    CHECK(first.size() == 4 + 3);
    CHECK(device.kernel_pages[parts].size() == 1);
    CHECK(device.kernel_pages[parts + 1].size() == 4); // the new allocation, 200000 bytes
    CHECK(device.kernel_pages[parts + 1][0] != device.kernel_pages[parts][0]);
    CHECK(result["results"]["accesses_outside_managed_memory"] == 0);
    CHECK(result["results"]["accesses"] == 12);
  }
  // The simulator runs the same trace, at the trace's own pages.
  simtest::Scratch scratch;
  nlohmann::json cfg = simtest::Scratch::run_config(nlohmann::json::object(), "ondemand");
  cfg["capacity"] = {{"fraction_of_footprint", 0.5}, {"mode", "budget"}};
  faultline::Simulator sim(simtest::parse(cfg), path, 1);
  const faultline::Stats& stats = sim.run();
  CHECK(stats.accesses == 10);
  CHECK(stats.faults > 0);
}

TEST_CASE("budget mode: kernels larger than the budget are cut alike in the simulator and the "
          "replay, and the policy hears the same faults",
          "[live][sim]") {
  fltest::TempDir dir;
  const std::string trace = dnn_trace(dir, 11);
  simtest::Scratch scratch;
  for (double fraction : {0.05, 0.1}) {
    std::vector<std::vector<faultline::Addr>> live_log, sim_log;
    FakeDevice device;
    live::ReplayRequest request;
    request.trace_path = trace;
    request.policy = "test-fault-log";
    request.budget_fraction = fraction;
    request.margin = 0;
    fault_log = &live_log;
    const auto result = live::run_replay(request, device);
    const uint64_t chunks =
        result["config"]["budget"]["resolved_bytes"].get<uint64_t>() / kBlockSize;
    INFO("budget " << fraction << ": " << chunks << " chunks");
    CHECK(device.peak_chunks <= chunks);
    // Some kernel ran in parts.
    CHECK(device.kernel_pages.size() > live_log.size());

    nlohmann::json cfg = simtest::Scratch::run_config({{"prefetch", false}}, "test-fault-log");
    cfg["capacity"] = {{"fraction_of_footprint", 1.0}, {"mode", "budget"}};
    cfg["per_kernel"] = false;
    fault_log = &sim_log;
    faultline::Simulator sim(simtest::parse(cfg), trace, chunks);
    const faultline::Stats& stats = sim.run();
    fault_log = nullptr;
    CHECK(stats.peak_chunks <= chunks);
    CHECK(stats.kernels == device.kernel_pages.size()); // the same parts
    CHECK(result["results"]["kernels"] == stats.kernels);
    REQUIRE(sim_log.size() == live_log.size());
    for (size_t k = 0; k < sim_log.size(); ++k) {
      INFO("kernel " << k);
      CHECK(std::multiset<faultline::Addr>(sim_log[k].begin(), sim_log[k].end()) ==
            std::multiset<faultline::Addr>(live_log[k].begin(), live_log[k].end()));
    }
  }
}
