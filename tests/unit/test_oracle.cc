// oracle: Belady eviction and exact lookahead prefetch, read from the trace itself.
#include "policy_harness.h"
#include "sim/trace/writer.h"
#include "test_support.h"

#include <catch2/catch.hpp>
#include <random>
#include <set>

using namespace faultline;
using Catch::Matchers::Contains;
using fltest::PolicyHarness;

namespace {

constexpr Addr kBase = Addr{1} << 32; // block b lives at kBase + b * 2 MB

// A trace of one managed allocation of `blocks` blocks and one kernel per entry of `kernels`,
// each touching the listed (block, page) pairs in order.
std::string write_trace(const fltest::TempDir& dir, uint64_t blocks,
                        const std::vector<std::vector<std::pair<uint64_t, unsigned>>>& kernels) {
  const std::string path = dir.file("oracle.fltrace");
  trace::TraceWriter w(path, {{"source", "test_oracle"}});
  w.write(trace::AllocRecord{1, trace::MemoryKind::kManaged, kBase, blocks * kBlockSize, 0, 0});
  Time t = 10;
  for (const auto& touches : kernels) {
    trace::KernelRecord k;
    k.name = "k";
    k.start = t;
    k.duration = 1000;
    for (const auto& [block, page] : touches)
      k.accesses.push_back(
          {(kBase + block * kBlockSize) / kBigPageSize + page, 0, AccessType::kRead});
    w.write(k);
    t += 2000;
  }
  w.close();
  return path;
}

policies::Range block(uint64_t b) {
  return {kBase + b * kBlockSize, kBlockSize};
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
  for (uint64_t k = 0; k < 3; ++k) {
    const auto actions = oracle.launch(k, {});
    REQUIRE(actions.size() == 1);
    CHECK(actions[0].kind == policies::ActionKind::kPrefetch);
    oracle.end(k);
  }
  const auto actions = oracle.launch(3, {});
  REQUIRE(actions.size() == 2);
  CHECK(actions[0].kind == policies::ActionKind::kEvict);
  CHECK(actions[0].range.start == block(1).start);
  CHECK(actions[0].range.bytes == kBlockSize);
  CHECK(actions[1].kind == policies::ActionKind::kPrefetch);
  CHECK(actions[1].range.start == block(3).start);
}

TEST_CASE("oracle: prefetches exactly the pages the coming kernels touch", "[policy]") {
  fltest::TempDir dir;
  const std::string trace = write_trace(dir, 1, {{{0, 0}, {0, 1}, {0, 2}, {0, 5}}, {{0, 31}}});
  PolicyHarness oracle("oracle", nlohmann::json::object());
  oracle.start(8 * kBlockSize, trace);
  oracle.alloc(1, kBase, kBlockSize);
  const auto actions = oracle.launch(0, {});
  REQUIRE(actions.size() == 3);
  CHECK(actions[0].range.start == kBase);
  CHECK(actions[0].range.bytes == 3 * kBigPageSize);
  CHECK(actions[1].range.start == kBase + 5 * kBigPageSize);
  CHECK(actions[1].range.bytes == kBigPageSize);
  CHECK(actions[2].range.start == kBase + 31 * kBigPageSize); // kernel 1, same block
  CHECK(oracle.launch(1, {}).empty());                        // already there
}

TEST_CASE("oracle: an allocation not made yet is prefetched once it is", "[policy]") {
  fltest::TempDir dir;
  // Kernel 0 touches block 0; kernel 1 touches block 1, which the program allocates between them.
  const std::string trace = write_trace(dir, 2, {{{0, 0}}, {{1, 0}}});
  PolicyHarness oracle("oracle", nlohmann::json::object());
  oracle.start(8 * kBlockSize, trace);
  oracle.alloc(1, kBase, kBlockSize);
  const auto first = oracle.launch(0, {});
  REQUIRE(first.size() == 1); // block 0 only: block 1 is no allocation yet
  CHECK(first[0].range.start == kBase);
  oracle.alloc(2, kBase + kBlockSize, kBlockSize);
  const auto second = oracle.launch(1, {});
  REQUIRE(second.size() == 1); // before, the oracle believed block 1 was prefetched already
  CHECK(second[0].range.start == kBase + kBlockSize);
  CHECK(second[0].range.bytes == kBigPageSize);
}

TEST_CASE("oracle: never holds more blocks than the GPU has (random traces)", "[policy]") {
  fltest::TempDir dir;
  std::mt19937_64 rng(5);
  std::vector<std::vector<std::pair<uint64_t, unsigned>>> kernels(300);
  for (auto& k : kernels)
    for (int i = 0, n = 1 + rng() % 6; i < n; ++i) k.push_back({rng() % 12, unsigned(rng() % 32)});
  const std::string trace = write_trace(dir, 12, kernels);
  const uint64_t capacity = GENERATE(1, 3, 5);
  PolicyHarness oracle("oracle", nlohmann::json::object());
  oracle.start(capacity * kBlockSize, trace);
  oracle.alloc(1, kBase, 12 * kBlockSize);
  std::set<Addr> held;
  size_t prefetches = 0;
  for (uint64_t k = 0; k < kernels.size(); ++k) {
    for (const auto& a : oracle.launch(k, {})) {
      const Addr b = a.range.start / kBlockSize;
      if (a.kind == policies::ActionKind::kEvict) {
        CHECK(held.erase(b) == 1); // only what it put there
      } else {
        held.insert(b);
        ++prefetches;
      }
      CHECK(held.size() <= capacity);
    }
    oracle.end(k);
  }
  CHECK(prefetches >= kernels.size() / 2);
}

TEST_CASE("oracle: parameters are checked", "[policy]") {
  CHECK_THROWS_WITH(PolicyHarness("oracle", {{"lookahead", 3}}), Contains("lookahead"));
  CHECK_THROWS_WITH(PolicyHarness("oracle", {{"max_lookahead_kernels", -1}}),
                    Contains("max_lookahead_kernels"));
}
