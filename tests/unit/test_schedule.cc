// schedule: learns a training step's kernels (names, argument blocks, faults) in the first step,
// plans along what it learned from the second on (Belady on learned next use, prefetch in order
// of need), falls back to the driver on a kernel sequence it has not seen, discards freed blocks.
#include "harness_gpu.h"
#include "policy_harness.h"
#include "sim/core/error.h"

#include <catch2/catch.hpp>
#include <random>
#include <set>

using namespace faultline;
using Catch::Matchers::Contains;
using fltest::block;
using fltest::Gpu;
using fltest::has;
using fltest::kBase;
using fltest::page;
using fltest::PolicyHarness;
using policies::ActionKind;

namespace {

// One big page of block b: what a kernel's argument names here.
policies::Range arg(uint64_t b) {
  return {page(b, 0), kBigPageSize};
}

// The name of the kernel that touches block b.
std::string named(uint64_t b) {
  std::string name = "k";
  name += std::to_string(b);
  return name;
}

// One step of kernels named "k<block>", each touching page 0 of its block: launch, the driver's
// faults on what is missing, end.
size_t run_step(PolicyHarness& policy, Gpu& gpu, uint64_t step, uint64_t& kernel,
                const std::vector<uint64_t>& blocks,
                std::vector<policies::Actions>* launches = nullptr) {
  policy.step(step);
  size_t faults = 0;
  for (uint64_t b : blocks) {
    const auto actions = gpu.launch(kernel, named(b), {arg(b)});
    if (launches) launches->push_back(actions);
    if (!gpu.pages.count(b) || !(gpu.pages[b] & 1u)) {
      gpu.faults({{b, 0}});
      ++faults;
    }
    gpu.end(kernel++);
  }
  return faults;
}

} // namespace

// Off the schedule it would prefetch each launch's arguments (PUMP's part): off here, so that
// what the learned step does shows alone.
const nlohmann::json kLearnedOnly = {{"prefetch_arguments", false}};

TEST_CASE("schedule: learns in the first step, acts in the second", "[policy]") {
  PolicyHarness policy("schedule", kLearnedOnly);
  policy.start(2 * kBlockSize);
  policy.alloc(1, kBase, 3 * kBlockSize);
  Gpu gpu(policy, 2);
  uint64_t kernel = 0;
  std::vector<policies::Actions> first;
  CHECK(run_step(policy, gpu, 0, kernel, {0, 1, 2}, &first) == 3);
  for (const auto& actions : first) CHECK(actions.empty()); // nothing known yet: the driver's
  // Step 1 begins with block 0, which the driver evicted for block 2 (the GPU holds 1 and 2). Of
  // those, block 2's next use is the farthest (kernel k2): it goes, and block 0 comes ahead of its
  // kernel.
  policy.step(1);
  const auto actions = gpu.launch(kernel, "k0", {arg(0)});
  CHECK(has(actions, ActionKind::kEvict, block(2).start));
  CHECK(has(actions, ActionKind::kPrefetch, page(0, 0)));
  CHECK_FALSE(has(actions, ActionKind::kEvict, block(1).start));
}

TEST_CASE("schedule: a learned step runs with fewer faults than the driver's", "[policy]") {
  PolicyHarness policy("schedule", kLearnedOnly);
  policy.start(3 * kBlockSize);
  policy.alloc(1, kBase, 6 * kBlockSize);
  Gpu gpu(policy, 3);
  uint64_t kernel = 0;
  // A cyclic sweep over 6 blocks on a GPU of 3: the driver's FIFO faults on every one.
  const std::vector<uint64_t> sweep{0, 1, 2, 3, 4, 5};
  CHECK(run_step(policy, gpu, 0, kernel, sweep) == 6);
  for (uint64_t s = 1; s < 4; ++s) CHECK(run_step(policy, gpu, s, kernel, sweep) == 0);
}

// A step of run_step taking `took` of time.
size_t timed_step(PolicyHarness& policy, Gpu& gpu, uint64_t step, uint64_t& kernel, Time took,
                  std::vector<policies::Actions>* launches = nullptr) {
  const size_t faults = run_step(policy, gpu, step, kernel, {0, 1, 2}, launches);
  policy.advance(took);
  return faults;
}

bool any_action(const std::vector<policies::Actions>& launches) {
  return std::any_of(launches.begin(), launches.end(), [](const auto& a) { return !a.empty(); });
}

TEST_CASE("schedule: slow followed steps bring a probe off the schedule; a faster probe, the "
          "driver",
          "[policy]") {
  for (const Time probe : {Time{100}, Time{300}}) {
    PolicyHarness policy("schedule", kLearnedOnly);
    policy.start(2 * kBlockSize);
    policy.alloc(1, kBase, 3 * kBlockSize);
    Gpu gpu(policy, 2);
    uint64_t kernel = 0, step = 0;
    timed_step(policy, gpu, step++, kernel, 100); // recorded, off the schedule
    for (int i = 0; i < 3; ++i) {                 // followed, and twice as slow
      std::vector<policies::Actions> launches;
      timed_step(policy, gpu, step++, kernel, 200, &launches);
      CHECK(any_action(launches));
    }
    std::vector<policies::Actions> probed, after;
    timed_step(policy, gpu, step++, kernel, probe, &probed);
    CHECK_FALSE(any_action(probed)); // off the schedule on purpose
    timed_step(policy, gpu, step++, kernel, 200, &after);
    INFO("probe " << probe);
    CHECK(any_action(after) == (probe == 300)); // faster: the driver's from then on
  }
}

TEST_CASE("schedule: a new kernel sequence runs as the driver's, then is learned", "[policy]") {
  PolicyHarness policy("schedule", kLearnedOnly);
  policy.start(2 * kBlockSize);
  policy.alloc(1, kBase, 6 * kBlockSize);
  Gpu gpu(policy, 2);
  uint64_t kernel = 0;
  run_step(policy, gpu, 0, kernel, {0, 1, 2});
  // Step 1 launches kernels the learned step never had (k3, k4, k5): no action.
  std::vector<policies::Actions> other;
  CHECK(run_step(policy, gpu, 1, kernel, {3, 4, 5}, &other) == 3);
  for (const auto& actions : other) CHECK(actions.empty());
  // Step 2 repeats step 1's sequence: learned from it, so block 3 comes ahead of k3.
  policy.step(2);
  CHECK(has(gpu.launch(kernel, "k3", {arg(3)}), ActionKind::kPrefetch, page(3, 0)));
}

TEST_CASE("schedule: off the schedule, a launch's arguments come ahead of its kernel", "[policy]") {
  PolicyHarness policy("schedule", nlohmann::json::object());
  policy.start(2 * kBlockSize);
  policy.alloc(1, kBase, 3 * kBlockSize);
  Gpu gpu(policy, 2);
  uint64_t kernel = 0;
  policy.step(0);
  const auto first = gpu.launch(kernel, "k0", {arg(0)});
  REQUIRE(first.size() == 1); // its own argument only: nothing of the kernels to come is known
  CHECK(has(first, ActionKind::kPrefetch, page(0, 0)));
  gpu.end(kernel++);
  gpu.launch(kernel, "k1", {arg(1)});
  gpu.end(kernel++);
  // The GPU is full: room for k2's block is made in the driver's order, the oldest first.
  const auto third = gpu.launch(kernel, "k2", {arg(2)});
  CHECK(has(third, ActionKind::kEvict, block(0).start));
  CHECK(has(third, ActionKind::kPrefetch, page(2, 0)));
}

TEST_CASE("schedule: a kernel skipped within the resync window keeps the schedule", "[policy]") {
  PolicyHarness policy("schedule", {{"resync_kernels", 4}, {"prefetch_arguments", false}});
  policy.start(2 * kBlockSize);
  policy.alloc(1, kBase, 4 * kBlockSize);
  Gpu gpu(policy, 2);
  uint64_t kernel = 0;
  run_step(policy, gpu, 0, kernel, {0, 1, 2, 3});
  // k0 is not launched this time: k1 is found one position on and followed, so its block, which
  // the driver evicted, comes ahead of it.
  policy.step(1);
  const auto actions = gpu.launch(kernel, "k1", {arg(1)});
  CHECK(has(actions, ActionKind::kPrefetch, page(1, 0)));
}

TEST_CASE("schedule: a victim's pages in freed allocator blocks are discarded, not written back",
          "[policy]") {
  PolicyHarness policy("schedule", nlohmann::json::object());
  policy.start(2 * kBlockSize);
  policy.alloc(1, kBase, 3 * kBlockSize);
  const policies::Range tensor{page(2, 0), 4 * kBigPageSize};
  policy.alloc(2, tensor.start, tensor.bytes, true);
  Gpu gpu(policy, 2);
  uint64_t kernel = 0;
  run_step(policy, gpu, 0, kernel, {0, 1, 2});
  policy.free(2, tensor.start, tensor.bytes, true); // the framework freed the tensor in block 2
  policy.step(1);
  const auto actions = gpu.launch(kernel, "k0", {arg(0)});
  REQUIRE(has(actions, ActionKind::kDiscard, tensor.start));
  const auto discard = std::find_if(actions.begin(), actions.end(),
                                    [](const auto& a) { return a.kind == ActionKind::kDiscard; });
  CHECK(discard->range.bytes == tensor.bytes);
  const auto evict = std::find_if(actions.begin(), actions.end(),
                                  [](const auto& a) { return a.kind == ActionKind::kEvict; });
  REQUIRE(evict != actions.end());
  CHECK(discard < evict); // dropped first: the eviction writes back only what is left
  // Allocated again, the range is live data: evicted, it is written back.
  PolicyHarness again("schedule", {{"discard_freed", false}});
  again.start(2 * kBlockSize);
  again.alloc(1, kBase, 3 * kBlockSize);
  Gpu gpu2(again, 2);
  kernel = 0;
  run_step(again, gpu2, 0, kernel, {0, 1, 2});
  again.free(2, tensor.start, tensor.bytes, true);
  again.step(1);
  CHECK_FALSE(has(gpu2.launch(kernel, "k0", {arg(0)}), ActionKind::kDiscard, tensor.start));
}

TEST_CASE("schedule: never holds more than the GPU's capacity, whatever the steps do",
          "[policy][random]") {
  std::mt19937_64 rng(GENERATE(1u, 2u, 3u, 4u, 5u));
  const uint64_t blocks = 24, capacity = 4 + rng() % 8;
  PolicyHarness policy("schedule", nlohmann::json::object());
  policy.start(capacity * kBlockSize);
  policy.alloc(1, kBase, blocks * kBlockSize);
  Gpu gpu(policy, capacity); // its hold() checks the capacity after every action
  std::vector<std::vector<uint64_t>> program(12);
  for (auto& k : program)
    for (size_t n = 1 + rng() % 5; n > 0; --n) k.push_back(rng() % blocks);
  uint64_t kernel = 0;
  for (uint64_t step = 0; step < 8; ++step) {
    policy.step(step);
    const bool deviate = rng() % 4 == 0;
    for (size_t i = 0; i < program.size(); ++i) {
      if (deviate && rng() % 3 == 0) continue; // skipped or reordered kernels
      std::vector<policies::Range> args;
      for (uint64_t b : program[i]) args.push_back(arg(b));
      gpu.launch(kernel, named(deviate ? rng() % 20 : i), args);
      std::vector<std::pair<uint64_t, unsigned>> missing;
      for (uint64_t b : program[i])
        if (!gpu.pages.count(b) || !(gpu.pages[b] & 1u)) missing.emplace_back(b, 0u);
      if (missing.size() > capacity) missing.resize(capacity);
      if (!missing.empty()) gpu.faults(missing);
      gpu.end(kernel++);
      REQUIRE(gpu.pages.size() <= capacity);
    }
  }
}

TEST_CASE("schedule: its parameters are read strictly", "[policy][config]") {
  CHECK_THROWS_WITH(PolicyHarness("schedule", {{"lookahead", 3}}),
                    Contains("$.policy.params") && Contains("lookahead"));
  CHECK_THROWS_AS(PolicyHarness("schedule", {{"resync_kernels", "four"}}), ConfigError);
}
