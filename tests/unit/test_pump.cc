// pump: PUMP's launch-time prefetching of argument blocks under a GPU-memory factor.
#include "policy_harness.h"
#include "sim/core/error.h"
#include "sim/trace/writer.h"
#include "test_support.h"

#include <catch2/catch.hpp>
#include <deque>
#include <map>
#include <random>

using namespace faultline;
using Catch::Matchers::Contains;
using fltest::PolicyHarness;

namespace {

constexpr Bytes MiB = 1ull << 20;

bool prefetches(const policies::Actions& actions, policies::Range r) {
  for (const auto& a : actions)
    if (a.kind == policies::ActionKind::kPrefetch && a.range.start == r.start &&
        a.range.bytes == r.bytes && a.target == gpu_processor(0))
      return true;
  return false;
}

} // namespace

TEST_CASE("pump: prefetches every block a launch names, whole, to the GPU", "[policy]") {
  PolicyHarness pump("pump", nlohmann::json::object());
  pump.start(1024 * MiB);
  const policies::Range a{1 << 30, 8 * MiB}, b{(1ull << 30) + 64 * MiB, 3 * MiB + 4096};
  const auto actions = pump.launch(0, {a, b, a});
  CHECK(actions.size() == 2);
  CHECK(prefetches(actions, a));
  CHECK(prefetches(actions, b));
}

TEST_CASE("pump: a prefetch over the factor waits for the oldest kernel to finish", "[policy]") {
  PolicyHarness pump("pump", {{"memory_factor_percent", 60}});
  pump.start(100 * MiB); // budget 60 MiB
  const policies::Range a{0, 50 * MiB}, b{1ull << 32, 20 * MiB};
  CHECK(prefetches(pump.launch(0, {a}), a));
  CHECK(pump.launch(1, {b}).empty()); // 50 + 20 > 60 while kernel 0 runs
  CHECK(pump.launch(2, {a}).empty()); // behind kernel 1, in launch order
  const auto after0 = pump.end(0);
  CHECK(after0.size() == 1);
  CHECK(prefetches(after0, b)); // kernel 2 still waits: 20 + 50 > 60 while kernel 1 runs
  CHECK(prefetches(pump.end(1), a));
}

TEST_CASE("pump: the factor is 60% without allocator records and 80% with them", "[policy]") {
  const policies::Range big{0, 70 * MiB}, small{1ull << 32, 5 * MiB};
  PolicyHarness plain("pump", nlohmann::json::object());
  plain.start(100 * MiB);
  plain.launch(0, {small});
  CHECK(plain.launch(1, {big}).empty()); // 75 MiB > 60%
  PolicyHarness framework("pump", nlohmann::json::object());
  framework.start(100 * MiB);
  framework.alloc(7, 0, 70 * MiB, /*block=*/true);
  framework.launch(0, {small});
  CHECK(prefetches(framework.launch(1, {big}), big)); // 75 MiB <= 80%
}

TEST_CASE("pump: bytes held by unfinished kernels never exceed the factor (random launches)",
          "[policy]") {
  const double percent = GENERATE(60.0, 80.0, 100.0);
  std::mt19937_64 rng(static_cast<uint64_t>(percent));
  const Bytes capacity = 256 * MiB;
  const Bytes budget = static_cast<Bytes>(capacity * percent / 100);
  PolicyHarness pump("pump", {{"memory_factor_percent", percent}});
  pump.start(capacity);
  using Blocks = std::map<Addr, Bytes>;
  std::deque<std::pair<uint64_t, Blocks>> waiting, running; // as the model expects them
  auto held = [&] {
    Blocks all;
    for (const auto& [k, blocks] : running) all.insert(blocks.begin(), blocks.end());
    Bytes n = 0;
    for (const auto& [start, bytes] : all) n += bytes;
    return n;
  };
  // Attributes a call's actions to waiting kernels in launch order, checking each kernel's
  // prefetches and the budget at the moment it is issued.
  auto consume = [&](const policies::Actions& actions) {
    size_t pos = 0;
    while (pos < actions.size()) {
      REQUIRE(!waiting.empty());
      const Blocks& blocks = waiting.front().second;
      for (const auto& [start, bytes] : blocks) {
        REQUIRE(pos < actions.size());
        CHECK(prefetches({actions[pos]}, {start, bytes}));
        ++pos;
      }
      const bool older_running = !running.empty();
      running.push_back(std::move(waiting.front()));
      waiting.pop_front();
      if (older_running) CHECK(held() <= budget);
    }
  };
  uint64_t next = 0;
  for (int step = 0; step < 3000; ++step) {
    if (rng() % 3 || running.empty()) {
      Blocks blocks;
      for (int i = 0, n = 1 + rng() % 3; i < n; ++i)
        blocks[(rng() % 16) << 32] = 32 * MiB; // one size per address: blocks are allocations
      std::vector<policies::Range> args;
      for (const auto& [start, bytes] : blocks) args.push_back({start, bytes});
      waiting.push_back({next, blocks});
      consume(pump.launch(next++, args));
    } else {
      const uint64_t k = running.front().first;
      running.pop_front();
      consume(pump.end(k));
    }
  }
  CHECK(next > 1500);
}

TEST_CASE("pump: with a lead it hears later launches early, up to a synchronisation, and the "
          "factor throttles them",
          "[policy]") {
  // Kernels 0-3 name allocations A, B, C, D of 40 MiB each; a device sync follows kernel 2.
  fltest::TempDir dir;
  const std::string path = dir.file("lead.fltrace");
  const Addr base = Addr{1} << 32;
  auto range = [&](uint64_t id) { return policies::Range{base + id * 64 * MiB, 40 * MiB}; };
  {
    trace::TraceWriter w(path, {{"source", "test_pump"}});
    for (uint64_t id = 1; id <= 4; ++id)
      w.write(trace::AllocRecord{id, trace::MemoryKind::kManaged, range(id).start, 40 * MiB, 0, 0});
    for (uint64_t k = 0; k < 4; ++k) {
      if (k == 3) w.write(trace::SyncRecord{static_cast<Time>(10 + 2000 * k - 1), trace::SyncKind::kDevice, 0});
      trace::KernelRecord r;
      r.name = "k";
      r.start = 10 + 2000 * static_cast<Time>(k);
      r.duration = 1000;
      r.args = {k + 1};
      w.write(r);
    }
    w.close();
  }
  SECTION("a factor that holds two launches") {
    PolicyHarness pump("pump", {{"memory_factor_percent", 80}, {"lead_launches", 8}});
    pump.start(100 * MiB, path); // 80 MiB: two blocks at a time
    const auto at0 = pump.launch(0, {range(1)});
    CHECK(at0.size() == 2); // kernels 0 and 1, heard at 0's start; 2 waits for 0
    CHECK(prefetches(at0, range(1)));
    CHECK(prefetches(at0, range(2)));
    const auto after0 = pump.end(0);
    CHECK(after0.size() == 1);
    CHECK(prefetches(after0, range(3)));
    CHECK(pump.launch(1, {range(2)}).empty());
    CHECK(pump.end(1).empty());
    CHECK(pump.launch(2, {range(3)}).empty());
    CHECK(pump.end(2).empty());
    // Kernel 3 lies behind the sync: heard only at its own start.
    CHECK(prefetches(pump.launch(3, {range(4)}), range(4)));
  }
  SECTION("no lead: each launch heard at its start, the factor never binds") {
    PolicyHarness pump("pump", {{"memory_factor_percent", 20}});
    pump.start(100 * MiB, path);
    for (uint64_t k = 0; k < 4; ++k) {
      const auto actions = pump.launch(k, {range(k + 1)});
      CHECK(actions.size() == 1);
      CHECK(prefetches(actions, range(k + 1)));
      CHECK(pump.end(k).empty());
    }
  }
}

TEST_CASE("pump: parameters are checked", "[policy]") {
  CHECK_THROWS_WITH(PolicyHarness("pump", {{"memory_factor_percent", 150}}),
                    Contains("memory_factor_percent: expected 0 to 100, got 150"));
  CHECK_THROWS_WITH(PolicyHarness("pump", {{"factor", 60}}), Contains("factor"));
  CHECK_THROWS_WITH(PolicyHarness("pump", {{"memory_factor_percent", "high"}}),
                    Contains("memory_factor_percent"));
  CHECK_THROWS_WITH(PolicyHarness("pump", {{"lead_launches", -1}}), Contains("lead_launches"));
}
