// deepum: its correlation tables, chained prefetching across predicted kernels, pre-eviction of
// the least recently migrated blocks outside the window, discard of freed allocator blocks.
#include "policies/deepum/tables.h"
#include "policy_harness.h"

#include <algorithm>
#include <catch2/catch.hpp>

using namespace faultline;
using namespace faultline::policies;
using Catch::Matchers::Contains;
using fltest::PolicyHarness;

namespace {

constexpr Addr kBase = Addr{1} << 33;
Addr at(uint64_t block) {
  return kBase + block * kBlockSize;
}

std::vector<uint64_t> blocks_of(const Actions& actions, ActionKind kind) {
  std::vector<uint64_t> out;
  for (const Action& a : actions)
    if (a.kind == kind) out.push_back((a.range.start - kBase) / kBlockSize);
  return out;
}

// Runs kernel `index` named `name` whose execution faults on `blocks` (one batch each).
Actions run_kernel(PolicyHarness& p, uint64_t index, const std::string& name,
                   const std::vector<uint64_t>& blocks, bool end = true) {
  Actions all = p.launch_named(index, name);
  for (uint64_t b : blocks) {
    Actions a = p.fault_batch({at(b)});
    all.insert(all.end(), a.begin(), a.end());
  }
  if (end) p.end(index);
  return all;
}

} // namespace

TEST_CASE("deepum tables: MRU successors, ways replaced least recently used", "[policy]") {
  using Succ = std::vector<deepum::BlockTable::Successor>;
  deepum::BlockTable t(1, 2, 2); // one set of two ways, two successors each
  t.add_successor(10, 11);
  t.add_successor(10, 12);
  t.add_successor(10, 11);
  CHECK(t.successors(10) == Succ{{11, false}, {12, false}});
  t.add_successor(10, 13);
  CHECK(t.successors(10) == Succ{{13, false}, {11, false}});
  t.add_successor(20, 21);
  t.add_successor(30, 31); // a third block in the set: 10 was used least recently
  CHECK(t.successors(10).empty());
  CHECK(t.successors(20) == Succ{{21, false}});

  deepum::ExecutionTable e;
  e.record(5, {1, 2, 3}, 7);
  e.record(5, {1, 2, 4}, 8);
  CHECK(e.predict(5, {1, 2, 3}) == 7u); // all three match
  CHECK(e.predict(5, {9, 9, 4}) == 8u); // the immediate predecessor matches
  CHECK(e.predict(5, {9, 9, 9}) == 8u); // the latest record
  CHECK_FALSE(e.predict(6, {1, 2, 3}));
}

TEST_CASE("deepum: after one iteration a fault prefetches the chain into the next kernels",
          "[policy]") {
  PolicyHarness p("deepum", {{"pre_evict", false}});
  p.start(1024 * kBlockSize);
  // Iteration 1 trains: K0 faults 0,1,2; K1 faults 3,4; K2 faults 5,6.
  run_kernel(p, 0, "K0", {0, 1, 2});
  run_kernel(p, 1, "K1", {3, 4});
  run_kernel(p, 2, "K2", {5, 6});
  // Iteration 2: the resident blocks were dropped (freed and reallocated, say).
  p.free(1, kBase, 7 * kBlockSize);
  const Actions a = run_kernel(p, 3, "K0", {0}, false);
  const std::vector<uint64_t> fetched = blocks_of(a, ActionKind::kPrefetch);
  // Successors in K0 (1, 2), then K1 is predicted: its start block 3, then 4; then K2: 5, 6.
  CHECK(fetched == std::vector<uint64_t>{1, 2, 3, 4, 5, 6});
}

TEST_CASE("deepum: the chain stops N kernels ahead and resumes when a kernel ends", "[policy]") {
  PolicyHarness p("deepum", {{"pre_evict", false}, {"prefetch_kernels", 2}});
  p.start(1024 * kBlockSize);
  run_kernel(p, 0, "K0", {0});
  run_kernel(p, 1, "K1", {1});
  run_kernel(p, 2, "K2", {2});
  run_kernel(p, 3, "K3", {3});
  p.free(1, kBase, 4 * kBlockSize);
  const Actions first = run_kernel(p, 4, "K0", {0}, false);
  CHECK(blocks_of(first, ActionKind::kPrefetch) == std::vector<uint64_t>{1}); // K1 only
  p.launch_named(5, "K1");
  const Actions resumed = p.end(4);
  CHECK(blocks_of(resumed, ActionKind::kPrefetch) == std::vector<uint64_t>{2});
}

TEST_CASE("deepum: pre-eviction takes the least recently migrated block outside the window",
          "[policy]") {
  PolicyHarness p("deepum", {{"prefetch", false}, {"pre_evict_free_blocks", 1}});
  p.start(4 * kBlockSize); // one block kept free
  run_kernel(p, 0, "A", {0, 1});
  // Kernel B's second fault fills the GPU: block 0 (migrated first, not needed by B) goes.
  const Actions a = run_kernel(p, 1, "B", {2, 3}, false);
  CHECK(blocks_of(a, ActionKind::kEvict) == std::vector<uint64_t>{0});
}

TEST_CASE("deepum: an evicted block's pages in freed allocator blocks are discarded", "[policy]") {
  auto victim_actions = [](bool discard) {
    PolicyHarness p(
        "deepum", {{"prefetch", false}, {"pre_evict_free_blocks", 1}, {"discard_freed", discard}});
    p.start(4 * kBlockSize);
    p.alloc(2, kBase + kBlockSize / 2, kBlockSize, /*block=*/true);
    run_kernel(p, 0, "A", {0});
    run_kernel(p, 1, "B", {1});
    p.free(2, kBase + kBlockSize / 2, kBlockSize, /*block=*/true);
    return run_kernel(p, 2, "C", {2, 3}, false);
  };
  const Actions a = victim_actions(true);
  REQUIRE(a.size() == 2);
  CHECK(a[0].kind == ActionKind::kDiscard); // the freed half of block 0
  CHECK(a[0].range.start == kBase + kBlockSize / 2);
  CHECK(a[0].range.bytes == kBlockSize / 2);
  CHECK(a[1].kind == ActionKind::kEvict);
  CHECK(a[1].range.start == kBase);
  const Actions kept = victim_actions(false);
  CHECK(blocks_of(kept, ActionKind::kDiscard).empty());
  CHECK(blocks_of(kept, ActionKind::kEvict) == std::vector<uint64_t>{0});
}

TEST_CASE("deepum: without pre-eviction a chain prefetches into a full GPU", "[policy]") {
  PolicyHarness p("deepum", {{"pre_evict", false}});
  p.start(3 * kBlockSize);
  run_kernel(p, 0, "K0", {0, 1, 2, 3}); // trains 0 -> 1 -> 2 -> 3
  p.free(1, kBase, 4 * kBlockSize);
  const Actions a = run_kernel(p, 1, "K0", {0}, false);
  // The paper's first step: the driver evicts on the prefetches' path.
  CHECK(blocks_of(a, ActionKind::kPrefetch) == std::vector<uint64_t>{1, 2, 3});
  CHECK(blocks_of(a, ActionKind::kEvict).empty());
}

TEST_CASE("deepum: one execution ID over a moving window chains from one execution into the next",
          "[policy]") {
  PolicyHarness p("deepum", {{"prefetch_kernels", 4}});
  p.start(1024 * kBlockSize);
  // Iteration 1: kernel W runs 8 times, each execution faulting the next block.
  for (uint64_t k = 0; k < 8; ++k) run_kernel(p, k, "W", {k});
  p.free(1, kBase, 8 * kBlockSize);
  // Iteration 2: the fault on block 0 predicts W again, from where block 0's execution led:
  // blocks 1, 2, 3 for the next three executions, then the chain pauses (N = 4).
  const Actions a = run_kernel(p, 8, "W", {0}, false);
  CHECK(blocks_of(a, ActionKind::kPrefetch) == std::vector<uint64_t>{1, 2, 3});
  // The execution ends: the window moves on, and the chain resumes one kernel further.
  CHECK(blocks_of(p.end(8), ActionKind::kPrefetch) == std::vector<uint64_t>{4});
}

TEST_CASE("deepum: the ablation switches turn parts off", "[policy]") {
  PolicyHarness p("deepum", {{"prefetch", false}, {"pre_evict", false}});
  p.start(2 * kBlockSize);
  for (uint64_t k = 0; k < 6; ++k)
    CHECK(run_kernel(p, k, "K" + std::to_string(k % 2), {k % 3, 3 + k % 3}).empty());
}

TEST_CASE("deepum: parameters are checked", "[policy]") {
  CHECK_THROWS_WITH(PolicyHarness("deepum", {{"degree", 4}}), Contains("degree"));
  CHECK_THROWS_WITH(PolicyHarness("deepum", {{"table_rows", 0}}), Contains("at least 1"));
  CHECK_THROWS_WITH(PolicyHarness("deepum", {{"prefetch", "yes"}}), Contains("prefetch"));
}
