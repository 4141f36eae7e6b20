// Trace format v1: inputs the trace fuzzer (tests/fuzz/fuzz_trace.cc) found, each refused with a
// message where it is read (and, where a writer could make it, where it is written).
#include "sim/core/error.h"
#include "sim/trace/format.h"
#include "sim/trace/inspect.h"
#include "sim/trace/reader.h"
#include "sim/trace/varint.h"
#include "sim/trace/writer.h"
#include "test_support.h"
#include "trace_support.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

using namespace faultline;
using namespace faultline::trace;
using namespace faultline::trace::testing;
using Catch::Matchers::Contains;

// Inputs the trace fuzzer (tests/fuzz/fuzz_trace.cc) found; each is also replayed from
// tests/fuzz/regressions/trace/.
TEST_CASE("trace: a kernel name that is not UTF-8 is refused where it is read and written",
          "[trace]") {
  fltest::TempDir dir;
  const std::string bad_name = std::string("gemm_") + "\xe9" + "_kernel"; // Latin-1, not UTF-8
  SECTION("the reader names the string record and the byte") {
    // `trace dump` and the results write names as JSON, which refuses invalid UTF-8 with an
    // exception of its own, so the reader refuses the string.
    const std::string path = dir.file("name.fltrace");
    RawTrace raw;
    const size_t at = raw.offset();
    raw.string(0, bad_name).end(0).write(path);
    CHECK_THAT(
        trace_error(path),
        Contains(path) && Contains("record #0 (string) at byte " + std::to_string(at)) &&
            Contains("string 0 is not valid UTF-8 (at byte " + std::to_string(at + 3 + 5) + ")"));
  }
  SECTION("the writer refuses to write it") {
    const std::string path = dir.file("written.fltrace");
    TraceWriter w(path, {});
    KernelRecord k;
    k.name = bad_name;
    k.duration = 1;
    CHECK_THROWS_WITH(w.write(k), Contains(path) && Contains("kernel name \"gemm_...\"") &&
                                      Contains("is not valid UTF-8"));
  }
}

TEST_CASE("trace: times past 2^62 ns are refused before they overflow", "[trace]") {
  fltest::TempDir dir;
  constexpr uint64_t kHalf = uint64_t{1} << 61;
  SECTION("record times that add up past 2^62") {
    const std::string path = dir.file("dt.fltrace");
    RawTrace raw;
    raw.alloc(kHalf, 1, MemoryKind::kManaged, kSeg, kBlockSize).free(kHalf, 1);
    const size_t at = raw.offset();
    raw.alloc(1, 2, MemoryKind::kManaged, kSeg, kBlockSize).end(3).write(path);
    CHECK_THAT(trace_error(path),
               Contains("record #2 (alloc) at byte " + std::to_string(at)) &&
                   Contains("time step of 1 ns takes the trace past 2^62 ns (at " +
                            std::to_string(2 * kHalf) + " ns)"));
  }
  SECTION("a kernel that ends past 2^62") {
    const std::string path = dir.file("end.fltrace");
    RawTrace raw;
    raw.string(0, "k").kernel(kHalf, 0, 2 * kHalf, {}, {}).end(1).write(path);
    CHECK_THAT(trace_error(path), Contains("record #1 (kernel)") && Contains("ends past 2^62 ns"));
  }
  SECTION("an access offset step that would overflow") {
    const std::string path = dir.file("offset.fltrace");
    RawTrace raw;
    raw.string(0, "k").alloc(0, 1, MemoryKind::kManaged, kSeg, kBlockSize);
    raw.kernel(1, 0, 100, {1},
               {{static_cast<int64_t>(kSegPage), AccessType::kRead, 50},
                {1, AccessType::kRead, ~uint64_t{0} - 10}})
        .end(2)
        .write(path);
    CHECK_THAT(trace_error(path), Contains("access 1 at offset past 2^64 ns") &&
                                      Contains("beyond the kernel's duration of 100 ns"));
  }
}

TEST_CASE("trace: addresses past 2^57 are refused before anything walks their chunks", "[trace]") {
  // Found by fuzzing (tests/fuzz/regressions/trace/address-near-2-64): a managed allocation of
  // one byte at 2^64 - 16 KB made `trace stats` count chunks past the top of the address space,
  // where `b * 2 MB` wrapped to 0 and the walk never ended.
  fltest::TempDir dir;
  const std::string path = dir.file("high.fltrace");
  SECTION("an allocation") {
    RawTrace raw;
    raw.alloc(0, 1, MemoryKind::kManaged, ~Addr{0} - 16383, 1).end(1).write(path);
    CHECK_THAT(trace_error(path),
               Contains("record #0 (alloc)") &&
                   Contains("allocation 1 ends past 2^57, beyond any virtual address space"));
    RawTrace last;
    last.alloc(0, 1, MemoryKind::kManaged, kMaxAddress - kBlockSize, kBlockSize).end(1).write(path);
    CHECK(read_all(path) == 1); // up to 2^57 itself
  }
  SECTION("a kernel's access") {
    RawTrace raw;
    raw.string(0, "k").alloc(0, 1, MemoryKind::kManaged, kSeg, kBlockSize);
    raw.kernel(
           1, 0, 100, {1},
           {{static_cast<int64_t>(kSegPage), AccessType::kRead, 0},
            {static_cast<int64_t>(kMaxAddress / kBigPageSize - kSegPage), AccessType::kRead, 0}})
        .end(2)
        .write(path);
    CHECK_THAT(trace_error(path),
               Contains("record #2 (kernel)") &&
                   Contains("access 1 names big page " +
                            std::to_string(kMaxAddress / kBigPageSize) + ", past 2^57"));
  }
  SECTION("a host access") {
    RawTrace raw;
    raw.host(0, kMaxAddress - 10, 11).end(1).write(path);
    CHECK_THAT(trace_error(path),
               Contains("record #0 (host") && Contains("host access ends past 2^57"));
  }
}

TEST_CASE("trace: sizes no GPU holds are refused before anything keeps books per chunk",
          "[trace]") {
  // Found by fuzzing (tests/fuzz/regressions/trace/allocation-of-exabytes): `trace stats` counted
  // the 2 MB chunks an allocation of 2^60 bytes spans, one by one.
  fltest::TempDir dir;
  const std::string path = dir.file("big.fltrace");
  SECTION("managed and device allocations live at once past 1 TiB") {
    RawTrace raw;
    raw.alloc(0, 1, MemoryKind::kManaged, kSeg, kMaxLiveBytes / 2);
    const size_t at = raw.offset();
    raw.alloc(0, 2, MemoryKind::kDevice, 0, kMaxLiveBytes / 2 + 1).end(2).write(path);
    CHECK_THAT(trace_error(path),
               Contains("record #1 (alloc) at byte " + std::to_string(at)) &&
                   Contains("allocation 2 of " + std::to_string(kMaxLiveBytes / 2 + 1) +
                            " bytes takes the live allocations past 1 TiB (" +
                            std::to_string(kMaxLiveBytes / 2) + " bytes live)"));
  }
  SECTION("what is freed no longer counts") {
    RawTrace raw;
    raw.alloc(0, 1, MemoryKind::kManaged, kSeg, kMaxLiveBytes).free(0, 1);
    raw.alloc(0, 2, MemoryKind::kManaged, kSeg, kMaxLiveBytes).end(3).write(path);
    CHECK(read_all(path) == 3);
  }
  SECTION("a block past 1 TiB; a block larger than its segment is not an error") {
    // An expandable segment grows under its blocks: the recorded size is where it began.
    RawTrace grown;
    grown.alloc(0, 1, MemoryKind::kManaged, kSeg, kBlockSize);
    grown.alloc(0, 2, MemoryKind::kAllocatorBlock, kSeg, kBlockSize + 1, 1).end(2).write(path);
    CHECK(read_all(path) == 2);
    RawTrace raw;
    raw.alloc(0, 1, MemoryKind::kManaged, kSeg, kBlockSize);
    raw.alloc(0, 2, MemoryKind::kAllocatorBlock, kSeg, kMaxLiveBytes + 1, 1).end(2).write(path);
    CHECK_THAT(trace_error(path),
               Contains("record #1 (alloc)") &&
                   Contains("block 2 of " + std::to_string(kMaxLiveBytes + 1) +
                            " bytes is larger than 1 TiB, more than any GPU holds"));
  }
}
