// Trace format v1, bad input: the reader's diagnostics for every kind of bad file, each naming
// the file, the record and the byte, and what was expected.
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
    const std::string path = dir.file("v3.fltrace");
    RawTrace(header, 3).end(0).write(path);
    CHECK_THAT(trace_error(path), Contains(path) && Contains("byte 8") && Contains("version 3") &&
                                      Contains("reads versions 1 to 2"));
    RawTrace(header, 0).end(0).write(path);
    CHECK_THAT(trace_error(path), Contains("version 0") && Contains("reads versions 1 to 2"));
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
