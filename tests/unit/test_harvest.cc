// harvest under test: pre-eviction to the neighbour, the multi-path prefetch, the inner
// prefetcher.
#include "policy_harness.h"
#include "sim/core/error.h"

#include <catch2/catch.hpp>

using namespace faultline;
using namespace faultline::policies;
using fltest::PolicyHarness;

namespace {

constexpr Addr B = kBlockSize;

size_t count(const Actions& actions, ActionKind kind, ProcessorId target) {
  size_t n = 0;
  for (const Action& a : actions) n += a.kind == kind && a.target == target;
  return n;
}

} // namespace

TEST_CASE("harvest pre-evicts its oldest blocks to the neighbour below its reserve",
          "[policy][harvest]") {
  PolicyHarness h("harvest", {{"reserve_chunks", 2}, {"multi_path_prefetch", false}});
  h.view.free = {{0, 1 * B}, {1, 100 * B}};
  h.view.oldest = {10 * B, 11 * B, 12 * B, 13 * B};
  h.start_two_gpus(64 * B);
  // 1 free chunk < 2: evict until 4 (2R) are free; the faulted block 11 stays.
  const Actions a = h.fault_batch({11 * B + 4096});
  REQUIRE(a.size() == 3);
  for (const Action& e : a) {
    CHECK(e.kind == ActionKind::kEvict);
    CHECK(e.target == gpu_processor(1));
    CHECK(e.range.bytes == kBlockSize);
  }
  CHECK(a[0].range.start == 10 * B);
  CHECK(a[1].range.start == 12 * B);
  CHECK(a[2].range.start == 13 * B);
  // Enough free memory: nothing to do.
  h.view.free[0] = 8 * B;
  CHECK(h.fault_batch({11 * B}).empty());
}

TEST_CASE("harvest without neighbours, or with evict_to_peer off, evicts to the host",
          "[policy][harvest]") {
  PolicyHarness alone("harvest", {{"reserve_chunks", 2}, {"multi_path_prefetch", false}});
  alone.view.oldest = {10 * B, 11 * B, 12 * B};
  alone.start(64 * B); // one GPU
  CHECK(count(alone.launch(0, {}), ActionKind::kEvict, kHost) == 3);
  PolicyHarness off(
      "harvest", {{"reserve_chunks", 2}, {"evict_to_peer", false}, {"multi_path_prefetch", false}});
  off.view.oldest = {10 * B, 11 * B, 12 * B};
  off.view.free = {{1, 100 * B}};
  off.start_two_gpus(64 * B);
  CHECK(count(off.launch(0, {}), ActionKind::kEvict, kHost) == 3);
  PolicyHarness none("harvest", {{"pre_evict", false}, {"multi_path_prefetch", false}});
  none.view.oldest = {10 * B};
  none.start_two_gpus(64 * B);
  CHECK(none.launch(0, {}).empty());
}

TEST_CASE("harvest's multi-path prefetch pulls neighbour blocks and stages host blocks",
          "[policy][harvest]") {
  PolicyHarness h("harvest",
                  {{"pre_evict", false}, {"prefetch_chunks", 3}, {"prefetch_stride", 2}});
  h.view.free = {{0, 64 * B}, {1, 64 * B}};
  h.view.at = {{22 * B, gpu_processor(1)}, {24 * B, kHost}, {26 * B, gpu_processor(0)}};
  h.start_two_gpus(64 * B);
  // Faults on block 20: the window is 22, 24, 26 (stride 2) upwards.
  const Actions a = h.fault_batch({20 * B});
  REQUIRE(a.size() == 2); // 26 is already here
  CHECK(a[0].kind == ActionKind::kPrefetch);
  CHECK(a[0].range.start == 22 * B);
  CHECK(a[0].target == gpu_processor(0)); // neighbour -> here over NVLink
  CHECK(a[1].range.start == 24 * B);
  CHECK(a[1].target == gpu_processor(1)); // host -> neighbour over its PCIe link
  // Faults moving down: the window follows them. Blocks nobody touched yet are left alone.
  for (Addr b : {16 * B, 14 * B, 12 * B}) h.view.at[b] = kHost;
  h.view.at[10 * B] = kNoProcessor;
  const Actions d = h.fault_batch({18 * B});
  REQUIRE(d.size() == 3);
  CHECK(d[0].range.start == 16 * B);
  CHECK(d[2].range.start == 12 * B);
  // No neighbour to stage on: host blocks come straight here.
  PolicyHarness alone("harvest", {{"pre_evict", false}, {"prefetch_chunks", 1}});
  alone.view.at[22 * B] = kHost;
  alone.start(64 * B);
  const Actions s = alone.fault_batch({20 * B});
  REQUIRE(s.size() == 1);
  CHECK(s[0].target == gpu_processor(0));
}

TEST_CASE("harvest runs pump or deepum inside as its prefetcher", "[policy][harvest]") {
  PolicyHarness h("harvest", {{"prefetcher", "pump"}, {"pre_evict", false}});
  h.start_two_gpus(64 * B);
  const Actions a = h.launch(0, {{4 * B, 2 * B}});
  REQUIRE(a.size() == 1); // pump's prefetch of the argument blocks
  CHECK(a[0].kind == ActionKind::kPrefetch);
  CHECK(a[0].range.start == 4 * B);
  CHECK_THROWS_WITH(PolicyHarness("harvest", {{"prefetcher", "nosuch"}}),
                    Catch::Matchers::Contains("$.policy.params.prefetcher") &&
                        Catch::Matchers::Contains("deepum"));
  CHECK_THROWS_WITH(PolicyHarness("harvest", {{"prefetcher", "harvest"}}),
                    Catch::Matchers::Contains("inside itself"));
  CHECK_THROWS_WITH(
      PolicyHarness("harvest", {{"prefetcher_params", {{"x", 1}}}, {"prefetcher", "pump"}}),
      Catch::Matchers::Contains("x") && Catch::Matchers::Contains("unknown key"));
}

TEST_CASE("harvest watches faults when it pre-evicts, prefetches by path or wraps a policy "
          "that does",
          "[policy][harvest]") {
  CHECK(PolicyHarness("harvest", nlohmann::json::object()).observes_faults());
  CHECK(PolicyHarness("harvest", {{"pre_evict", false}}).observes_faults());
  CHECK(PolicyHarness("harvest", {{"multi_path_prefetch", false}}).observes_faults());
  CHECK_FALSE(PolicyHarness("harvest", {{"pre_evict", false}, {"multi_path_prefetch", false}})
                  .observes_faults());
  CHECK(PolicyHarness(
            "harvest",
            {{"pre_evict", false}, {"multi_path_prefetch", false}, {"prefetcher", "deepum"}})
            .observes_faults());
  CHECK_FALSE(PolicyHarness("ondemand", nlohmann::json::object()).observes_faults());
}
