// Trace format v1: round trips through TraceWriter and TraceReader, streaming of long kernels,
// the reader's diagnostics for every kind of bad input, and the trace statistics.
#include "sim/core/error.h"
#include "sim/trace/format.h"
#include "sim/trace/inspect.h"
#include "sim/trace/reader.h"
#include "sim/trace/varint.h"
#include "sim/trace/writer.h"
#include "test_support.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

using namespace faultline;
using namespace faultline::trace;
using Catch::Matchers::Contains;

namespace {

// Reads a whole trace; returns the number of records.
uint64_t read_all(const std::string& path) {
  TraceReader reader(path);
  Record r;
  uint64_t n = 0;
  while (reader.next(r)) ++n;
  return n;
}

// The TraceError message reading `path` gives; fails the test if it reads cleanly (any other
// exception type propagates and fails the test too).
std::string trace_error(const std::string& path) {
  try {
    read_all(path);
  } catch (const TraceError& e) {
    return e.what();
  }
  FAIL("reading " << path << " did not throw TraceError");
  return "";
}

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// Offsets of the block headers in a file holding one zstd frame (RFC 8878, section 3.1).
std::vector<size_t> zstd_block_headers(const std::string& f) {
  size_t pos = 4; // magic
  const auto fhd = static_cast<uint8_t>(f.at(pos++));
  const bool single_segment = fhd & 0x20;
  const unsigned fcs_flag = fhd >> 6, dict_flag = fhd & 3;
  if (!single_segment) ++pos; // window descriptor
  pos += dict_flag == 3 ? 4 : dict_flag;
  pos += fcs_flag == 0 ? (single_segment ? 1 : 0) : (size_t{1} << fcs_flag);
  std::vector<size_t> headers;
  while (pos + 3 <= f.size()) {
    headers.push_back(pos);
    const uint32_t h = static_cast<uint8_t>(f[pos]) | static_cast<uint8_t>(f[pos + 1]) << 8 |
                       static_cast<uint32_t>(static_cast<uint8_t>(f[pos + 2])) << 16;
    pos += 3 + (((h >> 1) & 3) == 1 ? 1 : h >> 3); // RLE blocks hold one byte
    if (h & 1) break;                              // last block
  }
  return headers;
}

// Hand-built decompressed trace content, following the layout in writer.cc.
class RawTrace {
public:
  explicit RawTrace(const std::string& header_text = default_metadata().dump(),
                    uint32_t version = kVersion) {
    bytes_.append(kMagic.data(), kMagic.size());
    put_u32(bytes_, version);
    put_u32(bytes_, static_cast<uint32_t>(header_text.size()));
    bytes_ += header_text;
  }
  // Offset in the decompressed stream where the next record starts.
  size_t offset() const { return bytes_.size(); }
  const std::string& bytes() const { return bytes_; }

  RawTrace& string(uint64_t id, const std::string& s) {
    type(RecordType::kString);
    put_varint(bytes_, id);
    put_varint(bytes_, s.size());
    bytes_ += s;
    return *this;
  }
  RawTrace& alloc(uint64_t dt, uint64_t id, MemoryKind kind, Addr address, Bytes size,
                  uint64_t segment = 0) {
    type(RecordType::kAlloc);
    put_varint(bytes_, dt);
    put_varint(bytes_, id);
    bytes_.push_back(static_cast<char>(kind));
    put_varint(bytes_, address);
    put_varint(bytes_, size);
    put_varint(bytes_, segment);
    return *this;
  }
  RawTrace& free(uint64_t dt, uint64_t id) {
    type(RecordType::kFree);
    put_varint(bytes_, dt);
    put_varint(bytes_, id);
    return *this;
  }
  struct RawAccess {
    int64_t page_delta;
    AccessType type;
    uint64_t offset_delta;
  };
  RawTrace& kernel(uint64_t dt, uint64_t name_id, uint64_t duration,
                   const std::vector<uint64_t>& args, const std::vector<RawAccess>& accesses) {
    type(RecordType::kKernel);
    put_varint(bytes_, dt);
    put_varint(bytes_, name_id);
    put_varint(bytes_, 0);                             // stream
    for (int i = 0; i < 6; ++i) put_varint(bytes_, 1); // grid, block
    put_varint(bytes_, duration);
    put_varint(bytes_, args.size());
    for (uint64_t a : args) put_varint(bytes_, a);
    put_varint(bytes_, accesses.size());
    for (const RawAccess& a : accesses) {
      put_varint(bytes_, (zigzag(a.page_delta) << 2) | static_cast<uint64_t>(a.type));
      put_varint(bytes_, a.offset_delta);
    }
    return *this;
  }
  RawTrace& host(uint64_t dt, Addr address, Bytes size) {
    type(RecordType::kHostAccess);
    put_varint(bytes_, dt);
    put_varint(bytes_, address);
    put_varint(bytes_, size);
    bytes_.push_back(static_cast<char>(AccessType::kRead));
    return *this;
  }
  RawTrace& end(uint64_t count) {
    type(RecordType::kEnd);
    put_varint(bytes_, count);
    return *this;
  }
  RawTrace& byte(uint8_t b) {
    bytes_.push_back(static_cast<char>(b));
    return *this;
  }
  void write(const std::string& path) const { fltest::write_zstd_file(path, bytes_); }

private:
  void type(RecordType t) { bytes_.push_back(static_cast<char>(t)); }
  std::string bytes_;
};

constexpr Addr kSeg = Addr{0x7f00} << 32;
constexpr uint64_t kSegPage = kSeg / kBigPageSize;

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

// 20 kernels of 20,000 pseudo-random accesses each: compressed, several reader input buffers long.
std::string write_long_random_trace(const std::string& path, uint64_t seed) {
  TraceWriter w(path, {}, 1);
  w.write(AllocRecord{1, MemoryKind::kManaged, kSeg, kBlockSize * 1024, 0, 0});
  uint64_t x = seed;
  for (int k = 0; k < 20; ++k) {
    KernelRecord kr;
    kr.name = "kernel";
    kr.start = k * 1000000;
    kr.duration = 1000000;
    for (int i = 0; i < 20000; ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      kr.accesses.push_back({kSegPage + (x >> 30) % 32768, i * 20, AccessType::kRead});
    }
    w.write(kr);
  }
  w.close();
  return path;
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

TEST_CASE("trace: the reader rejects bad files naming the file and place and what was expected",
          "[trace]") {
  fltest::TempDir dir;
  const std::string header = default_metadata().dump();
  const size_t first = 16 + header.size(); // where the first record starts

  SECTION("missing file") {
    const std::string path = dir.file("no-such.fltrace");
    CHECK_THAT(trace_error(path), Contains(path) && Contains("cannot open trace"));
  }
  SECTION("not zstd") {
    const std::string path = dir.file("plain.txt");
    fltest::write_text(path, "this is a plain text file, not a trace\n");
    CHECK_THAT(trace_error(path), Contains(path) && Contains("corrupt compressed data") &&
                                      Contains("expected a zstd-compressed faultline trace"));
  }
  SECTION("empty file") {
    const std::string path = dir.file("empty.fltrace");
    fltest::write_text(path, "");
    CHECK_THAT(trace_error(path), Contains(path) && Contains("truncated"));
  }
  SECTION("bad magic") {
    const std::string path = dir.file("magic.fltrace");
    std::string bytes = RawTrace().end(0).bytes();
    bytes[1] = 'X';
    fltest::write_zstd_file(path, bytes);
    CHECK_THAT(trace_error(path), Contains(path) && Contains("byte 0") && Contains("bad magic"));
  }
  SECTION("shorter than the magic") {
    const std::string path = dir.file("short.fltrace");
    fltest::write_zstd_file(path, "FLTR");
    CHECK_THAT(trace_error(path), Contains(path) && Contains("shorter than the 8-byte magic"));
  }
  SECTION("wrong version") {
    const std::string path = dir.file("v2.fltrace");
    RawTrace(header, 2).end(0).write(path);
    CHECK_THAT(trace_error(path), Contains(path) && Contains("byte 8") && Contains("version 2") &&
                                      Contains("reads version 1"));
  }
  SECTION("header not JSON") {
    const std::string path = dir.file("json.fltrace");
    RawTrace("{\"page_size\": 4096, oops").end(0).write(path);
    CHECK_THAT(trace_error(path),
               Contains(path) && Contains("byte 16") && Contains("header is not a JSON object"));
  }
  SECTION("header is JSON but not an object") {
    const std::string path = dir.file("array.fltrace");
    RawTrace("[4096, 65536]").end(0).write(path);
    CHECK_THAT(trace_error(path), Contains(path) && Contains("header is not a JSON object"));
  }
  SECTION("header longer than the trace") {
    const std::string path = dir.file("long-header.fltrace");
    std::string bytes = RawTrace("{}").bytes();
    bytes[12] = 100; // claims 100 bytes of header; 2 follow
    fltest::write_zstd_file(path, bytes);
    CHECK_THAT(trace_error(path),
               Contains(path) && Contains("byte 12") && Contains("header of 100 bytes"));
  }
  SECTION("header without page_size") {
    const std::string path = dir.file("nopage.fltrace");
    nlohmann::json meta = default_metadata();
    meta.erase("page_size");
    RawTrace(meta.dump()).end(0).write(path);
    CHECK_THAT(trace_error(path), Contains(path) && Contains("\"page_size\" must be 4096"));
  }
  SECTION("header with page_size 8192") {
    const std::string path = dir.file("page8k.fltrace");
    nlohmann::json meta = default_metadata();
    meta["page_size"] = 8192;
    RawTrace(meta.dump()).end(0).write(path);
    CHECK_THAT(trace_error(path), Contains(path) && Contains("\"page_size\" must be 4096"));
  }
  SECTION("header with another access granularity") {
    const std::string path = dir.file("gran.fltrace");
    nlohmann::json meta = default_metadata();
    meta["access_granularity"] = 4096;
    RawTrace(meta.dump()).end(0).write(path);
    CHECK_THAT(trace_error(path),
               Contains(path) && Contains("\"access_granularity\" must be 65536"));
  }
  SECTION("compressed file cut in half") {
    const std::string good = dir.file("good.fltrace");
    fltest::write_small_trace(good);
    std::string bytes = fltest::read_text(good);
    const std::string path = dir.file("half.fltrace");
    fltest::write_text(path, bytes.substr(0, bytes.size() / 2));
    CHECK_THAT(trace_error(path), Contains(path) && Contains("truncated"));
  }
  SECTION("compressed file cut in half, long trace") {
    const std::string good = dir.file("good.fltrace");
    {
      TraceWriter w(good, {});
      w.write(AllocRecord{1, MemoryKind::kManaged, kSeg, kBlockSize * 1024, 0, 0});
      uint64_t x = 1;
      for (int k = 0; k < 40; ++k) {
        KernelRecord kr;
        kr.name = std::string(1, static_cast<char>('a' + k % 5));
        kr.start = 10 + k * 100000;
        kr.duration = 100000;
        kr.args = {1};
        for (int i = 0; i < 10000; ++i) {
          x = x * 6364136223846793005ull + 1442695040888963407ull;
          kr.accesses.push_back({kSegPage + (x >> 45) % 32768, i * 10, AccessType::kRead});
        }
        w.write(kr);
      }
      w.close();
    }
    std::string bytes = fltest::read_text(good);
    const std::string path = dir.file("half.fltrace");
    fltest::write_text(path, bytes.substr(0, bytes.size() / 2));
    CHECK_THAT(trace_error(path), Contains(path) && Contains("truncated"));
  }
  SECTION("one compressed byte flipped") {
    const std::string good = dir.file("good.fltrace");
    {
      TraceWriter w(good, {});
      w.write(AllocRecord{1, MemoryKind::kManaged, kSeg, kBlockSize * 64, 0, 0});
      uint64_t x = 7;
      for (int k = 0; k < 8; ++k) {
        KernelRecord kr;
        kr.name = "kernel";
        kr.start = k * 10000;
        kr.duration = 10000;
        for (int i = 0; i < 500; ++i) {
          x = x * 6364136223846793005ull + 1442695040888963407ull;
          kr.accesses.push_back({kSegPage + (x >> 50) % 2048, i * 20, AccessType::kWrite});
        }
        w.write(kr);
      }
      w.close();
    }
    std::string bytes = fltest::read_text(good);
    REQUIRE(read_all(good) == 9);
    bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0xff);
    const std::string path = dir.file("flipped.fltrace");
    fltest::write_text(path, bytes);
    const std::string msg = trace_error(path);
    CHECK_THAT(msg, Contains(path) && Contains("corrupt"));
    CHECK_THAT(msg, Contains("zstd") && Contains("compressed bytes"));
  }
  SECTION("one compressed byte flipped late in a long trace") {
    // zstd checks the frame's checksum only at its end, so the damaged data may first decode
    // into a bad record; the reader must still say that the compressed data is corrupt, and
    // name compressed bytes that exist.
    const std::string good = write_long_random_trace(dir.file("good.fltrace"), 3);
    std::string bytes = fltest::read_text(good);
    REQUIRE(bytes.size() > 3 * (1u << 17)); // several of the reader's input buffers
    const size_t flip = bytes.size() * 3 / 4;
    bytes[flip] = static_cast<char>(bytes[flip] ^ 0xff);
    const std::string path = dir.file("flipped.fltrace");
    fltest::write_text(path, bytes);
    const std::string msg = trace_error(path);
    INFO(msg);
    CHECK_THAT(msg, Contains(path) && Contains("corrupt") && Contains("zstd"));
    unsigned long long from = 0, to = 0;
    const size_t at = msg.find("compressed bytes ");
    REQUIRE(at != std::string::npos);
    REQUIRE((std::sscanf(msg.c_str() + at, "compressed bytes %llu to %llu", &from, &to) == 2 ||
             std::sscanf(msg.c_str() + at, "compressed bytes %llu and %llu", &from, &to) == 2));
    CHECK(from < to);
    CHECK(to <= bytes.size());
  }
  SECTION("a damaged zstd block late in a long trace") {
    // zstd fails on the block header itself; the compressed bytes named must include it.
    const std::string good = write_long_random_trace(dir.file("good.fltrace"), 5);
    std::string bytes = fltest::read_text(good);
    const std::vector<size_t> headers = zstd_block_headers(bytes);
    REQUIRE(headers.size() > 4);
    size_t damaged = 0;
    for (size_t h : headers) {
      if (h > bytes.size() * 2 / 3) {
        damaged = h;
        break;
      }
    }
    REQUIRE(damaged > 0);
    bytes[damaged] = static_cast<char>(bytes[damaged] | 0x06); // block type 3 is reserved
    const std::string path = dir.file("damaged.fltrace");
    fltest::write_text(path, bytes);
    const std::string msg = trace_error(path);
    INFO(msg);
    CHECK_THAT(msg, Contains(path) && Contains("corrupt compressed data in compressed bytes "));
    unsigned long long from = 0, to = 0;
    const size_t at = msg.find("compressed bytes ");
    REQUIRE(at != std::string::npos);
    REQUIRE(std::sscanf(msg.c_str() + at, "compressed bytes %llu to %llu", &from, &to) == 2);
    CHECK(from <= damaged);
    CHECK(damaged < to);
    CHECK(to <= bytes.size());
  }
  SECTION("unknown record type") {
    const std::string path = dir.file("type.fltrace");
    RawTrace raw;
    raw.alloc(0, 1, MemoryKind::kManaged, kSeg, kBlockSize);
    const size_t at = raw.offset();
    // type, dt, id, kind (1 byte each), address (7), size (4), segment (1)
    CHECK(at == first + 16);
    raw.byte(9).end(1);
    raw.write(path);
    CHECK_THAT(trace_error(path), Contains(path) && Contains("record #1 (unknown)") &&
                                      Contains("at byte " + std::to_string(at)) &&
                                      Contains("unknown record type 9"));
  }
  SECTION("free of an allocation that is not live") {
    const std::string path = dir.file("free.fltrace");
    RawTrace raw;
    raw.alloc(0, 1, MemoryKind::kManaged, kSeg, kBlockSize).free(5, 1);
    const size_t at = raw.offset();
    raw.free(5, 1).end(3).write(path);
    CHECK_THAT(trace_error(path), Contains(path) && Contains("record #2 (free)") &&
                                      Contains("at byte " + std::to_string(at)) &&
                                      Contains("free of allocation 1, which is not live"));
  }
  SECTION("kernel argument naming an unknown allocation") {
    const std::string path = dir.file("arg.fltrace");
    RawTrace raw;
    raw.string(0, "k").alloc(0, 1, MemoryKind::kManaged, kSeg, kBlockSize);
    const size_t at = raw.offset();
    raw.kernel(1, 0, 100, {1, 9}, {}).end(2).write(path);
    CHECK_THAT(trace_error(path), Contains(path) && Contains("record #2 (kernel)") &&
                                      Contains("at byte " + std::to_string(at)) &&
                                      Contains("argument 1 names allocation 9, which is not live"));
  }
  SECTION("access offset beyond the kernel's duration") {
    const std::string path = dir.file("offset.fltrace");
    RawTrace raw;
    raw.string(0, "k").alloc(0, 1, MemoryKind::kManaged, kSeg, kBlockSize);
    raw.kernel(1, 0, 100, {1},
               {{static_cast<int64_t>(kSegPage), AccessType::kRead, 50},
                {1, AccessType::kRead, 50},
                {1, AccessType::kRead, 1}})
        .end(2)
        .write(path);
    CHECK_THAT(trace_error(path), Contains(path) && Contains("record #2 (kernel)") &&
                                      Contains("access 2 at offset 101 ns") &&
                                      Contains("beyond the kernel's duration of 100 ns"));
  }
  SECTION("end record count mismatch") {
    const std::string path = dir.file("count.fltrace");
    RawTrace raw;
    raw.alloc(0, 1, MemoryKind::kManaged, kSeg, kBlockSize);
    const size_t at = raw.offset();
    raw.end(5).write(path);
    CHECK_THAT(trace_error(path), Contains(path) && Contains("record #1 (end)") &&
                                      Contains("at byte " + std::to_string(at)) &&
                                      Contains("end record counts 5 records but 1 were read"));
  }
  SECTION("no end record") {
    const std::string path = dir.file("noend.fltrace");
    RawTrace().alloc(0, 1, MemoryKind::kManaged, kSeg, kBlockSize).write(path);
    CHECK_THAT(trace_error(path), Contains(path) && Contains("record #1") &&
                                      Contains("truncated: the trace ends without its end record"));
  }
  SECTION("a record cut short") {
    const std::string path = dir.file("cut.fltrace");
    std::string bytes = RawTrace().alloc(0, 1, MemoryKind::kManaged, kSeg, kBlockSize).bytes();
    bytes.resize(bytes.size() - 2);
    fltest::write_zstd_file(path, bytes);
    CHECK_THAT(trace_error(path),
               Contains(path) && Contains("record #0 (alloc)") && Contains("truncated"));
  }
  SECTION("data after the end record") {
    const std::string path = dir.file("after.fltrace");
    RawTrace raw;
    raw.alloc(0, 1, MemoryKind::kManaged, kSeg, kBlockSize);
    const size_t at = raw.offset();
    raw.end(1).byte(0).write(path);
    CHECK_THAT(trace_error(path), Contains(path) && Contains("record #1 (end)") &&
                                      Contains("at byte " + std::to_string(at)) &&
                                      Contains("unexpected data after the end record"));
  }
  SECTION("a block naming a segment that does not exist") {
    const std::string path = dir.file("segment.fltrace");
    RawTrace raw;
    raw.alloc(0, 1, MemoryKind::kManaged, kSeg, kBlockSize);
    const size_t at = raw.offset();
    raw.alloc(0, 2, MemoryKind::kAllocatorBlock, kSeg, kBigPageSize, 42).end(2).write(path);
    CHECK_THAT(trace_error(path),
               Contains(path) && Contains("record #1 (alloc)") &&
                   Contains("at byte " + std::to_string(at)) &&
                   Contains("block 2 names segment 42, which is not a live segment"));
  }
  SECTION("a block naming another block as its segment") {
    const std::string path = dir.file("nested.fltrace");
    RawTrace()
        .alloc(0, 1, MemoryKind::kManaged, kSeg, kBlockSize)
        .alloc(0, 2, MemoryKind::kAllocatorBlock, kSeg, kBigPageSize, 1)
        .alloc(0, 3, MemoryKind::kAllocatorBlock, kSeg, kBigPageSize, 2)
        .end(3)
        .write(path);
    CHECK_THAT(trace_error(path), Contains(path) && Contains("record #2 (alloc)") &&
                                      Contains("names segment 2, which is not a live segment"));
  }
  SECTION("an allocation id that is already live") {
    const std::string path = dir.file("dup.fltrace");
    RawTrace()
        .alloc(0, 1, MemoryKind::kManaged, kSeg, kBlockSize)
        .alloc(0, 1, MemoryKind::kDevice, kSeg + kBlockSize, kBlockSize)
        .end(2)
        .write(path);
    CHECK_THAT(trace_error(path), Contains(path) && Contains("record #1 (alloc)") &&
                                      Contains("allocation id 1 is already live"));
  }
  SECTION("an unknown memory kind") {
    const std::string path = dir.file("kind.fltrace");
    RawTrace().alloc(0, 1, static_cast<MemoryKind>(3), kSeg, kBlockSize).end(1).write(path);
    CHECK_THAT(trace_error(path), Contains(path) && Contains("record #0 (alloc)") &&
                                      Contains("memory kind 3; expected 0 (managed)"));
  }
  SECTION("a kernel name string that was never defined") {
    const std::string path = dir.file("name.fltrace");
    RawTrace raw;
    raw.string(0, "k");
    const size_t at = raw.offset();
    raw.kernel(0, 3, 100, {}, {}).end(1).write(path);
    CHECK_THAT(trace_error(path), Contains(path) && Contains("record #1 (kernel)") &&
                                      Contains("at byte " + std::to_string(at)) &&
                                      Contains("kernel name string 3 is not defined"));
  }
  SECTION("a string id out of sequence") {
    const std::string path = dir.file("strings.fltrace");
    RawTrace().string(1, "k").end(0).write(path);
    CHECK_THAT(trace_error(path), Contains(path) && Contains("record #0 (string)") &&
                                      Contains("string id 1 out of sequence; expected 0"));
  }
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
