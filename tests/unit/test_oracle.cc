// oracle: Belady eviction and exact lookahead prefetch, read from the trace itself; planning
// again inside a kernel, ahead of host touches, with room for faults and whole spans per copy.
#include "harness_gpu.h"
#include "policy_harness.h"
#include "sim/trace/writer.h"
#include "test_support.h"

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

using Touches = std::vector<std::pair<uint64_t, unsigned>>; // (block, page) in order

// A trace of one managed allocation of `blocks` blocks and one kernel per entry of `kernels`,
// each touching the listed (block, page) pairs in order; `host[k]`, where given, are big pages
// the host reads before kernel k.
std::string write_trace(const fltest::TempDir& dir, uint64_t blocks,
                        const std::vector<Touches>& kernels,
                        const std::map<size_t, Touches>& host = {}) {
  const std::string path = dir.file("oracle.fltrace");
  trace::TraceWriter w(path, {{"source", "test_oracle"}});
  w.write(trace::AllocRecord{1, trace::MemoryKind::kManaged, kBase, blocks * kBlockSize, 0, 0});
  Time t = 10;
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (auto h = host.find(i); h != host.end())
      for (const auto& [block, page] : h->second)
        w.write(trace::HostAccessRecord{t++, kBase + block * kBlockSize + page * kBigPageSize,
                                        kBigPageSize, AccessType::kRead});
    trace::KernelRecord k;
    k.name = "k";
    k.start = t;
    k.duration = 1000;
    Time offset = 0;
    for (const auto& [block, page] : kernels[i])
      k.accesses.push_back(
          {(kBase + block * kBlockSize) / kBigPageSize + page, offset++, AccessType::kRead});
    w.write(k);
    t += 2000;
  }
  w.close();
  return path;
}

} // namespace

TEST_CASE("oracle: evicts the resident block whose next use is farthest away", "[policy]") {
  fltest::TempDir dir;
  // A B C D C A B: at D the GPU (3 blocks) holds A, B, C; B is needed last.
  const std::string trace =
      write_trace(dir, 4, {{{0, 0}}, {{1, 0}}, {{2, 0}}, {{3, 0}}, {{2, 0}}, {{0, 0}}, {{1, 0}}});
  PolicyHarness oracle("oracle", {{"max_lookahead_kernels", 1}});
  oracle.start(3 * kBlockSize, trace);
  oracle.alloc(1, kBase, 4 * kBlockSize);
  Gpu gpu(oracle, 3);
  for (uint64_t k = 0; k < 3; ++k) {
    const auto actions = gpu.launch(k);
    REQUIRE(actions.size() == 1);
    CHECK(actions[0].kind == ActionKind::kPrefetch);
    gpu.end(k);
  }
  const auto actions = gpu.launch(3);
  REQUIRE(actions.size() == 2);
  CHECK(actions[0].kind == ActionKind::kEvict);
  CHECK(actions[0].range.start == block(1).start);
  CHECK(actions[0].range.bytes == kBlockSize);
  CHECK(actions[1].kind == ActionKind::kPrefetch);
  CHECK(actions[1].range.start == block(3).start);
}

TEST_CASE("oracle: prefetches the pages the coming kernels touch, a block's span in one copy",
          "[policy]") {
  fltest::TempDir dir;
  // Scattered pages cost a copy each (the link's overhead per copy is some 900 KB of its
  // bandwidth): the span from the first to the last goes as one.
  const std::string trace = write_trace(dir, 2, {{{0, 2}, {0, 3}, {0, 4}, {0, 9}}, {{1, 31}}});
  PolicyHarness oracle("oracle", nlohmann::json::object());
  oracle.start(8 * kBlockSize, trace);
  oracle.alloc(1, kBase, 2 * kBlockSize);
  Gpu gpu(oracle, 8);
  const auto actions = gpu.launch(0);
  REQUIRE(actions.size() == 2);
  CHECK(actions[0].range.start == page(0, 2));
  CHECK(actions[0].range.bytes == 8 * kBigPageSize); // pages 2 to 9, not 2-4 and 9
  CHECK(actions[1].range.start == page(1, 31));      // kernel 1, one page
  CHECK(actions[1].range.bytes == kBigPageSize);
  CHECK(gpu.launch(1).empty()); // already there
}

TEST_CASE("oracle: an allocation not made yet is prefetched once it is", "[policy]") {
  fltest::TempDir dir;
  // Kernel 0 touches block 0; kernel 1 touches block 1, which the program allocates between them.
  const std::string trace = write_trace(dir, 2, {{{0, 0}}, {{1, 0}}});
  PolicyHarness oracle("oracle", nlohmann::json::object());
  oracle.start(8 * kBlockSize, trace);
  oracle.alloc(1, kBase, kBlockSize);
  Gpu gpu(oracle, 8);
  const auto first = gpu.launch(0);
  REQUIRE(first.size() == 1); // block 0 only: block 1 is no allocation yet
  CHECK(first[0].range.start == kBase);
  gpu.end(0);
  oracle.alloc(2, kBase + kBlockSize, kBlockSize);
  const auto second = gpu.launch(1);
  REQUIRE(second.size() == 1); // before, the oracle believed block 1 was prefetched already
  CHECK(second[0].range.start == kBase + kBlockSize);
  CHECK(second[0].range.bytes == kBigPageSize);
}

TEST_CASE("oracle: pages the host touches leave at the kernel's end and come back at the next "
          "launch",
          "[policy]") {
  fltest::TempDir dir;
  // The host reads page 0 of block 0 between the kernels. A host touch of a GPU page costs a
  // CPU fault (15 us on the H200); moved off at the kernel's end it costs none. Before this,
  // the oracle also believed the page still on the GPU, and kernel 1 faulted on it.
  const std::string trace =
      write_trace(dir, 1, {{{0, 0}, {0, 1}}, {{0, 0}, {0, 1}}}, {{1, {{0, 0}}}});
  PolicyHarness oracle("oracle", nlohmann::json::object());
  oracle.start(8 * kBlockSize, trace);
  oracle.alloc(1, kBase, kBlockSize);
  Gpu gpu(oracle, 8);
  const auto first = gpu.launch(0);
  REQUIRE(first.size() == 1);
  CHECK(first[0].range.bytes == 2 * kBigPageSize);
  const auto end = gpu.end(0);
  REQUIRE(end.size() == 1);
  CHECK(end[0].kind == ActionKind::kEvict);
  CHECK(end[0].range.start == page(0, 0));
  CHECK(end[0].range.bytes == kBigPageSize);
  const auto second = gpu.launch(1);
  REQUIRE(second.size() == 1);
  CHECK(second[0].kind == ActionKind::kPrefetch);
  CHECK(second[0].range.start == page(0, 0));
  CHECK(second[0].range.bytes == kBigPageSize);
}

TEST_CASE("oracle: a kernel that needs more blocks than fit gets its later blocks as it faults",
          "[policy]") {
  fltest::TempDir dir;
  // One kernel walks blocks 0..11 in turn, two pages each, on a GPU of 8 blocks. Before, the
  // oracle planned at launches only: the blocks past the first 8 faulted in, each evicting the
  // driver's oldest block, synchronously, while the kernel waited.
  Touches walk;
  for (uint64_t b = 0; b < 12; ++b) walk.insert(walk.end(), {{b, 0}, {b, 1}});
  const std::string trace = write_trace(dir, 12, {walk, {{0, 0}}});
  PolicyHarness oracle("oracle", nlohmann::json::object());
  oracle.start(8 * kBlockSize, trace);
  oracle.alloc(1, kBase, 12 * kBlockSize);
  Gpu gpu(oracle, 8);
  const auto launch = gpu.launch(0);
  // A quarter of the GPU (at most 8 blocks) stays free for the faults beyond the window.
  CHECK(launch.size() == 6);
  CHECK(gpu.pages.size() == 6);
  // The kernel faults on block 6: done with blocks 1 to 5 (block 0 is used again by kernel 1),
  // the oracle evicts them for 7..11 and keeps room for the next faults.
  const auto refill = gpu.faults({{6, 0}, {6, 1}});
  CHECK(has(refill, ActionKind::kEvict, block(1).start));
  CHECK_FALSE(has(refill, ActionKind::kEvict, block(0).start));
  for (uint64_t b = 7; b < 12; ++b) CHECK(has(refill, ActionKind::kPrefetch, block(b).start));
}

TEST_CASE("oracle: learns the blocks the driver evicted and brings them back", "[policy]") {
  fltest::TempDir dir;
  // Kernels 0 and 1 touch blocks 0 and 1; kernel 1 faults on block 2, which the driver makes
  // room for by evicting block 0 (its oldest); kernel 2 needs block 0 again.
  const std::string trace =
      write_trace(dir, 3, {{{0, 0}, {1, 0}}, {{0, 0}, {1, 0}}, {{0, 0}, {1, 0}}});
  PolicyHarness oracle("oracle", {{"max_lookahead_kernels", 1}});
  oracle.start(2 * kBlockSize, trace);
  oracle.alloc(1, kBase, 3 * kBlockSize);
  Gpu gpu(oracle, 2);
  CHECK(gpu.launch(0).size() == 2);
  gpu.end(0);
  CHECK(gpu.launch(1).empty());
  gpu.faults({{2, 0}}); // not in the trace's accesses: a fault the oracle did not foresee
  gpu.end(1);
  CHECK(!gpu.pages.count(0));
  const auto third = gpu.launch(2);
  CHECK(has(third, ActionKind::kPrefetch, block(0).start));
  CHECK(gpu.pages.count(0));
}

TEST_CASE("oracle: never holds more blocks than the GPU has (random traces)", "[policy]") {
  fltest::TempDir dir;
  std::mt19937_64 rng(5);
  std::vector<Touches> kernels(300);
  for (auto& k : kernels)
    for (int i = 0, n = 1 + rng() % 6; i < n; ++i) k.push_back({rng() % 12, unsigned(rng() % 32)});
  const std::string trace = write_trace(dir, 12, kernels);
  const uint64_t capacity = GENERATE(1, 3, 5);
  PolicyHarness oracle("oracle", nlohmann::json::object());
  oracle.start(capacity * kBlockSize, trace);
  oracle.alloc(1, kBase, 12 * kBlockSize);
  Gpu gpu(oracle, capacity); // its hold() checks the capacity
  size_t prefetches = 0;
  for (uint64_t k = 0; k < kernels.size(); ++k) {
    for (const auto& a : gpu.launch(k)) prefetches += a.kind == ActionKind::kPrefetch;
    std::vector<std::pair<uint64_t, unsigned>> missing;
    for (const auto& [b, p] : kernels[k])
      if (!gpu.pages.count(b) || !(gpu.pages[b] >> p & 1)) missing.push_back({b, p});
    if (!missing.empty()) gpu.faults(missing);
    gpu.end(k);
  }
  CHECK(prefetches >= kernels.size() / 2);
}

TEST_CASE("oracle: with discard_freed, a victim's pages in freed allocator blocks are dropped",
          "[policy]") {
  fltest::TempDir dir;
  // A B C on a GPU of 2: once A is done with (its next use never comes), it goes for C; a tensor
  // freed in it is discarded first.
  const std::string trace = write_trace(dir, 3, {{{0, 0}}, {{1, 0}}, {{2, 0}}});
  for (const bool discard : {false, true}) {
    PolicyHarness oracle("oracle", {{"discard_freed", discard}});
    oracle.start(2 * kBlockSize, trace);
    oracle.alloc(1, kBase, 3 * kBlockSize);
    oracle.alloc(2, page(0, 0), 2 * kBigPageSize, true);
    Gpu gpu(oracle, 2);
    gpu.launch(0);
    gpu.end(0);
    oracle.free(2, page(0, 0), 2 * kBigPageSize, true);
    auto actions = gpu.launch(1);
    gpu.end(1);
    for (const auto& a : gpu.launch(2)) actions.push_back(a);
    CHECK(has(actions, ActionKind::kEvict, block(0).start));
    CHECK(has(actions, ActionKind::kDiscard, page(0, 0)) == discard);
  }
}

TEST_CASE("oracle: parameters are checked", "[policy]") {
  CHECK_THROWS_WITH(PolicyHarness("oracle", {{"lookahead", 3}}), Contains("lookahead"));
  CHECK_THROWS_WITH(PolicyHarness("oracle", {{"max_lookahead_kernels", -1}}),
                    Contains("max_lookahead_kernels"));
}
