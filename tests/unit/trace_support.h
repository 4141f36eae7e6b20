// What the trace tests (test_trace*.cc) share: reading a trace whole or to its TraceError, and
// decompressed trace content built by hand.
#pragma once

#include "sim/core/error.h"
#include "sim/trace/format.h"
#include "sim/trace/reader.h"
#include "sim/trace/varint.h"
#include "test_support.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

namespace faultline::trace::testing {

// Reads a whole trace; returns the number of records.
inline uint64_t read_all(const std::string& path) {
  TraceReader reader(path);
  Record r;
  uint64_t n = 0;
  while (reader.next(r)) ++n;
  return n;
}

// The TraceError message reading `path` gives; fails the test if it reads cleanly (any other
// exception type propagates and fails the test too).
inline std::string trace_error(const std::string& path) {
  try {
    read_all(path);
  } catch (const TraceError& e) {
    return e.what();
  }
  FAIL("reading " << path << " did not throw TraceError");
  return "";
}

inline void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// Hand-built decompressed trace content, following the layout in writer.cc.
class RawTrace {
public:
  explicit RawTrace(const std::string& header_text = default_metadata().dump(),
                    uint32_t version = kVersion)
      : version_(version) {
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
                   const std::vector<uint64_t>& args, const std::vector<RawAccess>& accesses,
                   uint64_t queued = 0) {
    type(RecordType::kKernel);
    put_varint(bytes_, dt);
    put_varint(bytes_, name_id);
    put_varint(bytes_, 0);                             // stream
    for (int i = 0; i < 6; ++i) put_varint(bytes_, 1); // grid, block
    put_varint(bytes_, duration);
    if (version_ >= 2) put_varint(bytes_, queued);
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
  RawTrace& sync(uint64_t dt, uint8_t kind, uint64_t wait = 0) {
    type(RecordType::kSync);
    put_varint(bytes_, dt);
    bytes_.push_back(static_cast<char>(kind));
    put_varint(bytes_, 0); // stream
    if (version_ >= 2) put_varint(bytes_, wait);
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
  uint32_t version_;
  std::string bytes_;
};

inline constexpr Addr kSeg = Addr{0x7f00} << 32;

inline constexpr uint64_t kSegPage = kSeg / kBigPageSize;

} // namespace faultline::trace::testing
