// The live replay's CPU side, against a fake device that keeps its own account of what is on
// the GPU: the budget holds before every kernel, kernels touch exactly the recorded pages at
// the live addresses, policy actions reach the device at live addresses, and bad input is
// refused before anything is allocated.
#include "fake_device.h"
#include "policies/registry.h"
#include "replay_support.h"
#include "sim/core/error.h"
#include "sim/host/residency.h"
#include "sim/live/replay.h"
#include "sim/synth/synth.h"
#include "sim/trace/reader.h"
#include "sim/trace/writer.h"
#include "sim_fixture.h"
#include "source_dir.h"
#include "test_support.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <vector>

using faultline::kBigPageSize;
using faultline::kBlockSize;
namespace live = faultline::live;
using fltest::FakeDevice;

namespace fltest {
std::vector<std::vector<faultline::Addr>>* fault_log = nullptr;
} // namespace fltest

namespace {

using fltest::dnn_trace;
using fltest::fault_log;

// Logs the faults it is handed, kernel by kernel, and does nothing.
class FaultLog : public faultline::policies::IPolicy {
public:
  FaultLog(const nlohmann::json&, const std::string&) {}
  bool observes_faults() const override { return true; }
  void on_kernel_launch(const faultline::policies::LaunchEvent&,
                        faultline::policies::Actions&) override {
    fault_log->emplace_back();
  }
  void on_fault_batch(const faultline::policies::FaultBatchEvent& e,
                      faultline::policies::Actions&) override {
    fault_log->back().insert(fault_log->back().end(), e.faults.begin(), e.faults.end());
  }
};
FAULTLINE_REGISTER_POLICY(FaultLog, "test-fault-log");

// PUMP at half a random DNN-like trace's footprint, no margin (the fake device has no memory).
live::ReplayRequest pump_at_half(fltest::TempDir& dir) {
  live::ReplayRequest request;
  request.trace_path = dnn_trace(dir, 3);
  request.policy = "pump";
  request.budget_fraction = 0.5;
  request.margin = 0;
  return request;
}

} // namespace

TEST_CASE("replay: the budget holds before every kernel, on random DNN-like traces", "[live]") {
  fltest::TempDir dir;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    for (double fraction : {1.0, 0.5, 0.25}) {
      // Live allocations off a 2 MB boundary spread each trace chunk over two live ones.
      for (uint64_t misalign : {uint64_t{0}, 5 * kBigPageSize}) {
        FakeDevice device;
        device.misalign = misalign;
        live::ReplayRequest request;
        request.trace_path = dnn_trace(dir, seed);
        request.budget_fraction = fraction;
        request.margin = 0;
        const auto result = live::run_replay(request, device);
        const uint64_t budget = result["config"]["budget"]["resolved_bytes"].get<uint64_t>();
        INFO("seed " << seed << " budget " << fraction << " misalign " << misalign);
        CHECK(device.peak_chunks * kBlockSize <= budget);
        CHECK(result["results"]["peak_gpu_chunks"].get<uint64_t>() * kBlockSize <= budget);
        CHECK(result["results"]["kernels"].get<uint64_t>() == device.kernel_pages.size());
        if (misalign == 0)
          CHECK((fraction == 1.0) == (result["results"]["evictions"].get<uint64_t>() == 0));
      }
    }
  }
}

TEST_CASE("replay: kernels touch the recorded pages, in order, at the live addresses", "[live]") {
  fltest::TempDir dir;
  const std::string trace = dnn_trace(dir, 7);
  FakeDevice device;
  live::ReplayRequest request;
  request.trace_path = trace;
  request.margin = 0;
  const auto result = live::run_replay(request, device);
  // The same trace read by the simulator's reader: offsets within allocations must agree.
  faultline::trace::TraceReader reader(trace);
  faultline::trace::Record r;
  std::map<uint64_t, uint64_t> base; // trace allocation address -> size
  size_t k = 0;
  uint64_t accesses = 0;
  while (reader.next(r)) {
    if (r.type != faultline::trace::RecordType::kKernel) continue;
    REQUIRE(k < device.kernel_pages.size());
    REQUIRE(device.kernel_pages[k].size() == r.kernel.accesses.size());
    for (size_t i = 1; i < r.kernel.accesses.size(); ++i) {
      const int64_t recorded = static_cast<int64_t>(r.kernel.accesses[i].big_page) -
                               static_cast<int64_t>(r.kernel.accesses[i - 1].big_page);
      const int64_t live_step = static_cast<int64_t>(device.kernel_pages[k][i]) -
                                static_cast<int64_t>(device.kernel_pages[k][i - 1]);
      if (std::llabs(recorded) < 32) CHECK(live_step == recorded * int64_t{kBigPageSize});
    }
    accesses += r.kernel.accesses.size();
    ++k;
  }
  CHECK(k == device.kernel_pages.size());
  CHECK(result["results"]["accesses"].get<uint64_t>() == accesses);
  CHECK(result["results"]["accesses_outside_managed_memory"].get<uint64_t>() == 0);
  CHECK(device.quiesced >= 1);
}

TEST_CASE("replay: policy prefetches reach the device inside live allocations", "[live]") {
  fltest::TempDir dir;
  FakeDevice device;
  live::ReplayRequest request = pump_at_half(dir);
  const auto result = live::run_replay(request, device);
  REQUIRE(!device.prefetched.empty());
  for (const auto& [address, bytes] : device.prefetched) {
    CHECK(address >= (1ull << 30));
    CHECK(bytes <= kBlockSize); // chunk by chunk, so a large prefetch can make room as it goes
  }
  CHECK(result["results"]["prefetch"]["issued_bytes"].get<uint64_t>() > 0);
  CHECK(device.peak_chunks * kBlockSize <=
        result["config"]["budget"]["resolved_bytes"].get<uint64_t>());

  // Per kernel, every prefetch call is counted once: as moving pages, or as asking for pages
  // the books hold already (pump asks again for each kernel's arguments).
  FakeDevice again;
  request.per_kernel = true;
  uint64_t moving = 0, held = 0;
  const auto rows = live::run_replay(request, again)["kernels"];
  for (const auto& row : rows) {
    moving += row.value("to_gpu_calls", uint64_t{0});
    held += row.value("to_gpu_held_calls", uint64_t{0});
  }
  CHECK(moving > 0);
  CHECK(held > 0);
  CHECK(moving + held <= again.prefetched.size()); // those after the last kernel have no row
  CHECK(moving + held + 64 >= again.prefetched.size());
}

TEST_CASE("replay: the call log has a row per migration call, as the kernel rows count them",
          "[live]") {
  fltest::TempDir dir;
  FakeDevice device;
  live::ReplayRequest request = pump_at_half(dir);
  request.per_kernel = true;
  request.call_log = dir.file("calls.csv");
  const auto rows = live::run_replay(request, device)["kernels"];
  std::map<char, uint64_t> counted;
  for (const auto& row : rows) {
    counted['m'] += row.value("to_gpu_calls", uint64_t{0});
    counted['h'] += row.value("to_gpu_held_calls", uint64_t{0});
    counted['e'] += row.value("to_host_calls", uint64_t{0});
  }
  std::ifstream in(request.call_log);
  std::string line;
  std::getline(in, line);
  CHECK(line == "kernel,kind,address,bytes,start_ns,cpu_ns");
  std::map<char, uint64_t> logged;
  int64_t last_start = 0;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream cells_in(line);
    for (std::string c; std::getline(cells_in, c, ',');) cells.push_back(c);
    REQUIRE(cells.size() == 6);
    ++logged[cells[1].at(0)];
    CHECK(std::stoull(cells[2]) >= (1ull << 30)); // a trace address, not a live one
    CHECK(std::stoull(cells[3]) <= kBlockSize);
    CHECK(std::stoll(cells[4]) >= last_start); // in the order they were issued
    last_start = std::stoll(cells[4]);
  }
  CHECK(counted['m'] > 0);
  CHECK(counted['e'] > 0);
  for (const char kind : {'m', 'h', 'e'}) // calls after the last kernel have no row
    CHECK(logged[kind] >= counted[kind]);
  CHECK(logged['m'] + logged['h'] == device.prefetched.size());

  request.call_log = (dir.path() / "no-such-folder" / "calls.csv").string();
  FakeDevice untouched;
  CHECK_THROWS_WITH(live::run_replay(request, untouched),
                    Catch::Contains("--call-log") && Catch::Contains("cannot write"));
}

TEST_CASE("replay: refuses a trace that would not fit below the GPU's free memory", "[live]") {
  fltest::TempDir dir;
  FakeDevice device;
  device.free = 80ull << 20; // 64 MB of trace + touches + a 32 MB margin do not fit
  live::ReplayRequest request;
  request.trace_path = dnn_trace(dir, 1);
  request.margin = 32ull << 20;
  CHECK_THROWS_WITH(live::run_replay(request, device),
                    Catch::Contains("refusing to run") && Catch::Contains("--margin"));
  CHECK(device.kernel_pages.empty());
}

TEST_CASE("replay: an unknown policy is refused with the known names", "[live]") {
  fltest::TempDir dir;
  FakeDevice device;
  live::ReplayRequest request;
  request.trace_path = dnn_trace(dir, 1);
  request.policy = "nosuch";
  request.margin = 0;
  CHECK_THROWS_WITH(live::run_replay(request, device),
                    Catch::Contains("nosuch") && Catch::Contains("ondemand"));
}

TEST_CASE("replay: every step waits for the recorded host time before it, the first kernel and "
          "the last free too; host accesses take pages back",
          "[live]") {
  fltest::TempDir dir;
  const std::string path = dir.file("late.fltrace");
  constexpr faultline::Addr kBase = 1ull << 32;
  {
    namespace trace = faultline::trace;
    trace::TraceWriter w(path, {{"source", "test"}});
    w.write(trace::AllocRecord{1, trace::MemoryKind::kManaged, kBase, kBlockSize, 0, 0});
    trace::KernelRecord k;
    k.start = 3'000'000; // 3 ms of host work before the first kernel
    k.duration = 1000;
    k.accesses = {{kBase / kBigPageSize, 0, faultline::AccessType::kRead}};
    w.write(k);
    k.start = 5'000'000;
    w.write(k);
    w.write(trace::HostAccessRecord{6'000'000, kBase, kBigPageSize, faultline::AccessType::kWrite});
    k.start = 7'000'000;
    w.write(k);
    w.write(trace::FreeRecord{1, 9'000'000}); // host work after the last kernel
    w.close();
  }
  FakeDevice device;
  live::ReplayRequest request;
  request.trace_path = path;
  request.margin = 0;
  request.per_kernel = true;
  request.policy = "deepum"; // watches faults; acting on them is switched off
  request.policy_params = {{"prefetch", false}, {"pre_evict", false}, {"discard_freed", false}};
  const auto result = live::run_replay(request, device);
  const auto& rows = result["kernels"];
  CHECK(rows.at(0)["start_ns"].get<int64_t>() >= 3'000'000);
  CHECK(rows.at(1)["start_ns"].get<int64_t>() >=
        rows.at(0)["end_ns"].get<int64_t>() + 5'000'000 - 3'001'000);
  CHECK(result["results"]["total_time_ns"].get<int64_t>() >= 9'000'000);
  // The host's write took the page back: the third kernel faults on it again.
  CHECK(rows.at(0)["faults_reported"] == 1);
  CHECK(rows.at(1)["faults_reported"] == 0);
  CHECK(rows.at(2)["faults_reported"] == 1);
  // What the device says each kernel waited for copies goes into its row and the total.
  CHECK(result["results"]["copy_wait_ns"] == 0);
  FakeDevice waiting;
  waiting.copy_wait = 1234;
  const auto waited = live::run_replay(request, waiting);
  for (const auto& row : waited["kernels"]) CHECK(row["copy_wait_ns"] == 1234);
  CHECK(waited["results"]["copy_wait_ns"] == 3 * 1234);
}

TEST_CASE("residency: FIFO victims, never the pages asked for", "[live]") {
  using faultline::host::Residency;
  Residency r(2);
  r.admit(faultline::host::group_by_chunk({0, 1})); // chunk 0
  r.admit(faultline::host::group_by_chunk({32}));   // chunk 1
  auto victims =
      r.make_room(faultline::host::group_by_chunk({64, 0})); // chunk 2 and chunk 0: chunk 1 must go
  REQUIRE(victims.size() == 1);
  CHECK(victims[0] == 1);
  r.admit(faultline::host::group_by_chunk({64, 0}));
  CHECK(r.resident_chunks() == 2);
  r.remove(0, 32);
  CHECK(r.resident_chunks() == 1);
  CHECK_FALSE(r.resident(0));
  CHECK(r.resident(64));
  r.reserve(1); // device memory takes one chunk of the budget
  victims = r.make_room(faultline::host::group_by_chunk({96}));
  REQUIRE(victims.size() == 1);
  CHECK(victims[0] == 2);
  CHECK_THROWS_WITH(r.make_room(faultline::host::group_by_chunk({0, 32})),
                    Catch::Contains("more than the budget leaves"));
}

TEST_CASE("residency: pages group by chunk in order of first appearance", "[live]") {
  using faultline::host::Residency;
  const auto g = faultline::host::group_by_chunk({70, 3, 64, 1, 70});
  REQUIRE(g.size() == 2);
  CHECK(g[0].chunk == 2);
  CHECK(g[0].pages == (1u << 6 | 1u << 0));
  CHECK(g[1].chunk == 0);
  CHECK(g[1].pages == (1u << 3 | 1u << 1));
  Residency r(1);
  r.admit(g);
  CHECK(r.resident_chunks() == 2); // admit records; make_room enforces the budget
  CHECK(r.resident(70));
  CHECK_FALSE(r.resident(65));
}

TEST_CASE("replay: the kernels' faults reach the policy as batches, and every policy runs live",
          "[live]") {
  fltest::TempDir dir;
  using Source = live::ReplayRequest::FaultSource;
  for (const Source source : {Source::kBooks, Source::kCupti})
    for (const char* policy : {"ondemand", "deepum", "pump", "oracle"}) {
      FakeDevice device;
      live::ReplayRequest request;
      request.trace_path = dnn_trace(dir, 3);
      request.policy = policy;
      request.budget_fraction = 0.5;
      request.fault_source = source;
      request.counters = source == Source::kCupti; // CUPTI's fault records need them
      request.margin = 0;
      INFO(policy << (source == Source::kBooks ? " books" : " cupti"));
      const auto result = live::run_replay(request, device);
      // Only a policy that watches faults gets them; only CUPTI's are drained, after every
      // kernel. Every replay drains once at the end, for the counters, and where each step
      // after the first row begins (set-up, two steps: twice), for the step's counters.
      const bool watches = policy == std::string("deepum") || policy == std::string("oracle");
      const bool drains = watches && source == Source::kCupti;
      // The oracle prefetches all that each kernel touches here, so its kernels find nothing
      // absent: it may hear no fault at all.
      if (policy != std::string("oracle"))
        CHECK((result["results"]["faults_reported_to_policy"].get<uint64_t>() > 0) == watches);
      CHECK(result["steps"].size() == 3);
      CHECK(device.quiesced == (drains ? result["results"]["kernels"].get<uint64_t>() : 0) + 3);
      CHECK(device.peak_chunks * kBlockSize <=
            result["config"]["budget"]["resolved_bytes"].get<uint64_t>());
      // DeepUM learns block successions from faults in the first iteration and prefetches them
      // in the second.
      if (std::string(policy) == "deepum")
        CHECK(result["results"]["prefetch"]["issued_bytes"].get<uint64_t>() > 0);
    }
}

TEST_CASE("replay: from its books, a policy gets each kernel's pages that were off the GPU",
          "[live]") {
  fltest::TempDir dir;
  const std::string trace = dnn_trace(dir, 5);
  // What the trace's kernels find off the GPU when nothing leaves it but freed memory.
  std::vector<uint64_t> expected;
  {
    faultline::trace::TraceReader reader(trace);
    faultline::trace::Record r;
    std::map<uint64_t, faultline::trace::AllocRecord> allocations;
    std::set<uint64_t> on_gpu; // big pages
    while (reader.next(r)) {
      if (r.type == faultline::trace::RecordType::kAlloc) allocations[r.alloc.id] = r.alloc;
      if (r.type == faultline::trace::RecordType::kFree) {
        const auto& a = allocations.at(r.free.id);
        std::erase_if(on_gpu, [&](uint64_t p) {
          return p * kBigPageSize >= a.address && p * kBigPageSize < a.address + a.size;
        });
      }
      if (r.type != faultline::trace::RecordType::kKernel) continue;
      uint64_t n = 0;
      for (const auto& a : r.kernel.accesses) n += on_gpu.insert(a.big_page).second;
      expected.push_back(n);
    }
  }
  for (uint64_t misalign : {uint64_t{0}, 5 * kBigPageSize}) {
    FakeDevice device;
    device.misalign = misalign;
    live::ReplayRequest request;
    request.trace_path = trace;
    request.policy = "deepum"; // watches faults; acting on them is switched off
    request.policy_params = {{"prefetch", false}, {"pre_evict", false}, {"discard_freed", false}};
    request.margin = 0;
    request.per_kernel = true;
    const auto result = live::run_replay(request, device);
    const auto& rows = result["kernels"];
    REQUIRE(rows.size() == expected.size());
    INFO("misalign " << misalign);
    for (size_t k = 0; k < rows.size(); ++k) {
      INFO("kernel " << k);
      CHECK(rows[k]["faults_reported"] == expected[k]);
    }
    CHECK(device.quiesced == 3); // no drains: the end, and the two steps after the set-up
  }
}
