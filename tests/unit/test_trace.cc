// Trace format v1: round trips through TraceWriter and TraceReader, streaming of long kernels,
// the writer's refusals and the trace statistics. Bad input: test_trace_errors.cc and
// test_trace_fuzz_found.cc.
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

namespace {

void check_equal(const AllocRecord& a, const AllocRecord& b) {
  CHECK(a.id == b.id);
  CHECK(a.kind == b.kind);
  CHECK(a.address == b.address);
  CHECK(a.size == b.size);
  CHECK(a.time == b.time);
  CHECK(a.segment == b.segment);
}

void check_equal(const KernelRecord& a, const KernelRecord& b) {
  CHECK(a.name == b.name);
  CHECK(a.stream == b.stream);
  CHECK(a.grid.x == b.grid.x);
  CHECK(a.grid.y == b.grid.y);
  CHECK(a.grid.z == b.grid.z);
  CHECK(a.block.x == b.block.x);
  CHECK(a.block.y == b.block.y);
  CHECK(a.block.z == b.block.z);
  CHECK(a.start == b.start);
  CHECK(a.duration == b.duration);
  CHECK(a.args == b.args);
  REQUIRE(a.accesses.size() == b.accesses.size());
  for (size_t i = 0; i < a.accesses.size(); ++i) {
    const Access &x = a.accesses[i], &y = b.accesses[i];
    if (x.big_page == y.big_page && x.offset == y.offset && x.type == y.type) continue;
    INFO("first differing access: " << i); // reports only the first, not thousands
    CHECK(x.big_page == y.big_page);
    CHECK(x.offset == y.offset);
    CHECK(x.type == y.type);
    break;
  }
}

// Compares a read record with the one written (only the member named by `type`).
void check_equal(const Record& got, const Record& want) {
  REQUIRE(got.type == want.type);
  CHECK(got.time() == want.time());
  switch (want.type) {
  case RecordType::kAlloc:
    check_equal(got.alloc, want.alloc);
    break;
  case RecordType::kFree:
    CHECK(got.free.id == want.free.id);
    CHECK(got.free.time == want.free.time);
    break;
  case RecordType::kKernel:
    check_equal(got.kernel, want.kernel);
    break;
  case RecordType::kHostAccess:
    CHECK(got.host.time == want.host.time);
    CHECK(got.host.address == want.host.address);
    CHECK(got.host.size == want.host.size);
    CHECK(got.host.type == want.host.type);
    break;
  case RecordType::kSync:
    CHECK(got.sync.time == want.sync.time);
    CHECK(got.sync.kind == want.sync.kind);
    CHECK(got.sync.stream == want.sync.stream);
    break;
  default:
    FAIL("unexpected record type");
    break;
  }
}

Record make(const AllocRecord& r) {
  Record out;
  out.type = RecordType::kAlloc;
  out.alloc = r;
  return out;
}

Record make(const FreeRecord& r) {
  Record out;
  out.type = RecordType::kFree;
  out.free = r;
  return out;
}

Record make(const KernelRecord& r) {
  Record out;
  out.type = RecordType::kKernel;
  out.kernel = r;
  return out;
}

Record make(const HostAccessRecord& r) {
  Record out;
  out.type = RecordType::kHostAccess;
  out.host = r;
  return out;
}

Record make(const SyncRecord& r) {
  Record out;
  out.type = RecordType::kSync;
  out.sync = r;
  return out;
}

std::vector<Record> every_record_type() {
  std::vector<Record> v;
  v.push_back(make(AllocRecord{1, MemoryKind::kManaged, kSeg, 8 * kBlockSize, 10, 0}));
  v.push_back(make(AllocRecord{2, MemoryKind::kDevice, kSeg + 64 * kBlockSize, kBlockSize, 20, 0}));
  v.push_back(make(
      AllocRecord{3, MemoryKind::kAllocatorBlock, kSeg + kBlockSize, 3 * kBigPageSize, 20, 1}));
  KernelRecord k;
  k.name = "gemm_kernel<float, 128>";
  k.stream = 7;
  k.grid = {4, 5, 6};
  k.block = {32, 8, 2};
  k.start = 100;
  k.duration = 5000;
  k.args = {1, 3, 2};
  k.accesses = {
      {kSegPage + 40, 0, AccessType::kRead},
      {kSegPage + 2, 0, AccessType::kWrite}, // negative delta
      {kSegPage + 100, 100, AccessType::kAtomic},
      {kSegPage, 4000, AccessType::kPrefetch},                    // negative delta
      {kSegPage, 4000, AccessType::kRead},                        // zero delta, same offset
      {0, 4500, AccessType::kWrite},                              // huge negative delta
      {kMaxAddress / kBigPageSize - 1, 5000, AccessType::kRead}}; // the last page, at duration
  v.push_back(make(k));
  KernelRecord empty; // no name, no args, no accesses, zero duration
  empty.start = 5100;
  v.push_back(make(empty));
  KernelRecord again = k; // the name string is reused
  again.start = 5100;
  again.stream = 0;
  again.args = {2};
  again.accesses = {{kSegPage + 64 * 32, 0, AccessType::kAtomic}};
  v.push_back(make(again));
  v.push_back(make(HostAccessRecord{11000, kSeg + 12345, 777, AccessType::kWrite}));
  v.push_back(make(HostAccessRecord{11000, kSeg, kBlockSize, AccessType::kRead}));
  v.push_back(make(HostAccessRecord{11001, kSeg + 4096, 8, AccessType::kAtomic}));
  v.push_back(make(SyncRecord{12000, SyncKind::kStream, 7}));
  v.push_back(make(SyncRecord{12000, SyncKind::kEvent, 3}));
  v.push_back(make(SyncRecord{13000, SyncKind::kDevice, 0}));
  v.push_back(make(FreeRecord{3, 14000}));
  v.push_back(make(FreeRecord{1, 14000}));
  v.push_back(make(AllocRecord{1, MemoryKind::kManaged, kSeg, kBlockSize, 15000, 0})); // id reused
  v.push_back(make(FreeRecord{1, 15500}));
  v.push_back(make(FreeRecord{2, uint64_t{1} << 40})); // a large time step
  return v;
}

} // namespace

TEST_CASE("trace: every record type round-trips with its metadata", "[trace]") {
  fltest::TempDir dir;
  const std::string path = dir.file("all.fltrace");
  const std::vector<Record> records = every_record_type();
  const nlohmann::json meta = {{"source", "unit test"}, {"gpu", "H200"}, {"custom", {{"x", 5}}}};
  {
    TraceWriter w(path, meta);
    // Half through the typed overloads, half through write(const Record&).
    for (size_t i = 0; i < records.size(); ++i) {
      const Record& r = records[i];
      if (i % 2) {
        w.write(r);
        continue;
      }
      switch (r.type) {
      case RecordType::kAlloc:
        w.write(r.alloc);
        break;
      case RecordType::kFree:
        w.write(r.free);
        break;
      case RecordType::kKernel:
        w.write(r.kernel);
        break;
      case RecordType::kHostAccess:
        w.write(r.host);
        break;
      default:
        w.write(r.sync);
        break;
      }
    }
    CHECK(w.records() == records.size());
    w.close();
    w.close(); // idempotent
  }
  TraceReader reader(path);
  CHECK(reader.path() == path);
  const nlohmann::json& m = reader.metadata();
  CHECK(m["source"] == "unit test");
  CHECK(m["gpu"] == "H200");
  CHECK(m["custom"]["x"] == 5);
  CHECK(m["format"] == "faultline-trace");
  CHECK(m["page_size"] == kPageSize);
  CHECK(m["access_granularity"] == kBigPageSize);
  CHECK(m["driver"] == "unknown"); // defaults fill what the writer was not given
  CHECK(m["cuda"] == "unknown");
  CHECK(m["command"] == "unknown");

  Record got;
  got.kernel.accesses.resize(99); // stale storage from an earlier record must not leak
  for (size_t i = 0; i < records.size(); ++i) {
    INFO("record " << i);
    REQUIRE(reader.next(got));
    check_equal(got, records[i]);
    CHECK(reader.records() == i + 1);
  }
  CHECK_FALSE(reader.next(got));
  CHECK_FALSE(reader.next(got)); // stays at the end
  CHECK(reader.records() == records.size());
}

TEST_CASE("trace: an empty trace holds only its header and trailer", "[trace]") {
  fltest::TempDir dir;
  const std::string path = dir.file("empty.fltrace");
  {
    TraceWriter w(path, nlohmann::json::object());
    w.close();
  }
  TraceReader reader(path);
  CHECK(reader.metadata()["source"] == "unknown");
  Record r;
  CHECK_FALSE(reader.next(r));
  CHECK(reader.records() == 0);
}

TEST_CASE("trace: a kernel with 100k accesses streams across buffer refills", "[trace]") {
  fltest::TempDir dir;
  const std::string path = dir.file("long.fltrace");
  KernelRecord small;
  small.name = "small";
  small.start = 10;
  small.duration = 10;
  small.args = {1};
  small.accesses = {{kSegPage, 5, AccessType::kRead}};
  KernelRecord big;
  big.name = "big";
  big.start = 100;
  big.duration = 100000 * 3 + 7;
  big.args = {1};
  uint64_t x = 12345;
  for (uint64_t i = 0; i < 100000; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull; // LCG: pages jump both ways
    big.accesses.push_back({kSegPage + (x >> 40) % 1000003, static_cast<Time>(3 * i + (i % 3 == 0)),
                            static_cast<AccessType>((x >> 20) & 3)});
  }
  uint64_t raw = 0;
  {
    TraceWriter w(path, {{"source", "long"}});
    w.write(AllocRecord{1, MemoryKind::kManaged, kSeg, 1000003 * kBigPageSize, 0, 0});
    w.write(small);
    w.write(big);
    w.write(big); // twice, so the second starts at an arbitrary point of the buffer
    w.write(FreeRecord{1, 200});
    w.close();
    raw = w.raw_bytes();
  }
  REQUIRE(raw > 2 * (1u << 18)); // larger than the reader's 256 KB buffer, twice over
  TraceReader reader(path);
  Record r;
  REQUIRE(reader.next(r));
  CHECK(r.type == RecordType::kAlloc);
  REQUIRE(reader.next(r));
  check_equal(r.kernel, small);
  for (int i = 0; i < 2; ++i) {
    REQUIRE(reader.next(r));
    REQUIRE(r.type == RecordType::kKernel);
    check_equal(r.kernel, big);
  }
  REQUIRE(reader.next(r));
  CHECK(r.type == RecordType::kFree);
  CHECK_FALSE(reader.next(r));
  CHECK(reader.records() == 5);
}

TEST_CASE("trace: the writer refuses records out of time order and stays usable", "[trace]") {
  fltest::TempDir dir;
  const std::string path = dir.file("order.fltrace");
  {
    TraceWriter w(path, {});
    w.write(AllocRecord{1, MemoryKind::kManaged, kSeg, kBlockSize, 100, 0});
    CHECK_THROWS_AS(w.write(FreeRecord{1, 99}), Error);
    CHECK_THROWS_WITH(w.write(SyncRecord{50, SyncKind::kDevice, 0}),
                      Contains(path) &&
                          Contains("at time 50 ns is earlier than its predecessor at 100 ns"));
    KernelRecord late;
    late.name = "late"; // a new name: its string must not break the trace either
    late.start = 20;
    CHECK_THROWS_WITH(w.write(late), Contains("earlier than its predecessor"));
    CHECK_THROWS_WITH(w.write(AllocRecord{0, MemoryKind::kManaged, kSeg, kBlockSize, 200, 0}),
                      Contains("id 0 is reserved"));
    KernelRecord bad; // an access beyond the duration is refused without writing anything
    bad.name = "bad";
    bad.start = 150;
    bad.duration = 10;
    bad.accesses = {{kSegPage, 11, AccessType::kRead}};
    CHECK_THROWS_WITH(w.write(bad), Contains("within the kernel's duration"));
    bad.accesses = {{kSegPage, 5, AccessType::kRead}, {kSegPage, 4, AccessType::kRead}};
    CHECK_THROWS_WITH(w.write(bad), Contains("non-decreasing"));
    CHECK(w.records() == 1);
    w.write(FreeRecord{1, 100}); // the same time as its predecessor is fine
    w.close();
    CHECK_THROWS_WITH(w.write(FreeRecord{1, 300}), Contains("write after close"));
  }
  TraceReader reader(path);
  Record r;
  REQUIRE(reader.next(r));
  CHECK(r.type == RecordType::kAlloc);
  REQUIRE(reader.next(r));
  CHECK(r.type == RecordType::kFree);
  CHECK(r.free.time == 100);
  CHECK_FALSE(reader.next(r));
}

TEST_CASE("trace: a writer destroyed without close leaves a truncated trace", "[trace]") {
  fltest::TempDir dir;
  const std::string path = dir.file("unclosed.fltrace");
  {
    TraceWriter w(path, {});
    w.write(AllocRecord{1, MemoryKind::kManaged, kSeg, kBlockSize, 0, 0});
  }
  CHECK_THAT(trace_error(path), Contains(path) && Contains("truncated"));
}

TEST_CASE("trace: compute_stats and dump on a hand-built trace", "[trace]") {
  fltest::TempDir dir;
  const std::string path = dir.file("stats.fltrace");
  auto kernel = [](const std::string& name, Time start, Time duration,
                   std::vector<Access> accesses) {
    KernelRecord k;
    k.name = name;
    k.start = start;
    k.duration = duration;
    k.accesses = std::move(accesses);
    return k;
  };
  constexpr auto R = AccessType::kRead, W = AccessType::kWrite, A = AccessType::kAtomic,
                 P = AccessType::kPrefetch;
  {
    TraceWriter w(path, {{"source", "stats test"}});
    // 2 MB chunks live: {1, 2}
    w.write(AllocRecord{1, MemoryKind::kManaged, 0x200000, 3 << 20, 0, 0});
    // shares chunk 2: still {1, 2}
    w.write(AllocRecord{2, MemoryKind::kManaged, 0x500000, 1 << 20, 0, 0});
    // {1, 2, 8}
    w.write(AllocRecord{3, MemoryKind::kDevice, 0x1000000, 2 << 20, 10, 0});
    // blocks take no chunks of their own
    w.write(AllocRecord{4, MemoryKind::kAllocatorBlock, 0x200000, 64 << 10, 10, 1});
    // pages 32, 33 (block 1) and 64 (block 2); no reuse within a kernel
    w.write(kernel("a", 20, 100, {{32, 0, R}, {33, 10, W}, {32, 20, R}, {64, 30, A}}));
    // 33 and 32 were touched by kernel 1: 2 reuses; 100 is new (block 3)
    w.write(kernel("b", 200, 100, {{33, 0, R}, {100, 10, R}, {32, 20, P}}));
    w.write(FreeRecord{3, 300}); // {1, 2}
    // {1, 2, 16, 17}: the peak, 4 chunks
    w.write(AllocRecord{5, MemoryKind::kManaged, 0x2000000, (2 << 20) + 4096, 400, 0});
    // 100 was touched by kernel 2: 1 reuse
    w.write(kernel("a", 500, 50, {{100, 0, W}}));
    w.write(HostAccessRecord{600, 0x200000, 4096, R});
    w.write(SyncRecord{700, SyncKind::kDevice, 0});
    w.write(FreeRecord{4, 800});
    w.write(FreeRecord{5, 800});
    w.write(FreeRecord{2, 800});
    w.write(FreeRecord{1, 800});
    w.close();
  }
  const TraceStats s = compute_stats(path);
  CHECK(s.records == 15);
  CHECK(s.kernels == 3);
  CHECK(s.distinct_kernel_names == 2);
  CHECK(s.accesses == 8);
  CHECK(s.allocations == 5);
  CHECK(s.host_accesses == 1);
  CHECK(s.syncs == 1);
  CHECK(s.peak_managed_bytes == (3 << 20) + (1 << 20) + (2 << 20) + 4096);
  CHECK(s.allocated_managed_bytes == (3 << 20) + (1 << 20) + (2 << 20) + 4096);
  CHECK(s.host_read_bytes == 4096);
  CHECK(s.peak_device_bytes == 2 << 20);
  CHECK(s.footprint_chunks == 4);
  CHECK(s.footprint_bytes() == 4 * kBlockSize);
  CHECK(s.distinct_blocks == 3);
  CHECK(s.distinct_big_pages == 4);
  CHECK(s.compute_ns == 250);
  CHECK(s.span_ns == 800);
  CHECK(s.reuse_fraction == Approx(3.0 / 8.0));
  CHECK(s.compressed_bytes == std::filesystem::file_size(path));

  const nlohmann::json j = s.to_json();
  CHECK(j["footprint_bytes"] == 4 * kBlockSize);
  CHECK(j["distinct_2mb_blocks"] == 3);
  CHECK(j["distinct_64kb_pages"] == 4);
  CHECK(j["kernels"] == 3);
  CHECK(j["accesses"] == 8);

  std::ostringstream out;
  dump(path, out);
  std::istringstream in(out.str());
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  REQUIRE(lines.size() == 1 + 15);
  CHECK(lines[0]["type"] == "header");
  CHECK(lines[0]["version"] == kVersion);
  CHECK(lines[0]["metadata"]["source"] == "stats test");
  CHECK(lines[1]["type"] == "alloc");
  CHECK(lines[1]["kind"] == "managed");
  CHECK(lines[1]["size"] == 3 << 20);
  CHECK(lines[3]["kind"] == "device");
  CHECK(lines[4]["kind"] == "block");
  CHECK(lines[4]["segment"] == 1);
  CHECK(lines[5]["type"] == "kernel");
  CHECK(lines[5]["name"] == "a");
  CHECK(lines[5]["accesses"].size() == 4);
  CHECK(lines[5]["accesses"][3] == nlohmann::json::array({64 * kBigPageSize, 30, "atomic"}));
  CHECK(lines[6]["accesses"][2][2] == "prefetch");
  CHECK(lines[7]["type"] == "free");
  CHECK(lines[10]["type"] == "host_access");
  CHECK(lines[10]["access"] == "read");
  CHECK(lines[11]["type"] == "sync");
  CHECK(lines[11]["kind"] == "device");
}

TEST_CASE("trace: the small trace from test_support reads back as documented", "[trace]") {
  fltest::TempDir dir;
  const std::string path = fltest::write_small_trace(dir.file("small.fltrace"));
  const TraceStats s = compute_stats(path);
  CHECK(s.records == 8);
  CHECK(s.kernels == 2);
  CHECK(s.accesses == 6);
  CHECK(s.footprint_chunks == 3);
  CHECK(s.distinct_blocks == 2);
  TraceReader reader(path);
  CHECK(reader.metadata()["source"] == "test_support");
}
